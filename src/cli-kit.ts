/** What the operator CLI's commands share: argument checks and the error that ends a command. */

/** A refused command: its message is printed, the exit code is 1. */
export class CliError extends Error {}

export function required(values: Record<string, string | boolean | undefined>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new CliError(`--${name} is required`);
  return v;
}

export function bool(name: string, v: string): boolean {
  if (v !== 'true' && v !== 'false') throw new CliError(`--${name} must be true or false`);
  return v === 'true';
}

export function integer(name: string, v: string): number {
  if (!/^-?\d+$/.test(v)) throw new CliError(`--${name} must be an integer`);
  return Number(v);
}

/** Where a command writes besides its result: progress and notes (the CLI's stderr). */
export interface CliOutput {
  error(...text: unknown[]): void;
}
