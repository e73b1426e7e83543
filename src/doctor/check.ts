/** What one check of `parley doctor` found (docs/deploy.md, "Troubleshooting"). */
export interface CheckResult {
  /** Stable, for scripts reading `--json`. */
  name: string;
  title: string;
  /** `skip`: not applicable here, or not checkable from this machine; it does not fail the run. */
  status: 'pass' | 'fail' | 'skip';
  /** What was found. Never a secret's value: only whether it is set. */
  detail: string;
  /** How to mend a failure. */
  fix?: string;
}

export const pass = (name: string, title: string, detail: string): CheckResult => ({ name, title, status: 'pass', detail });
export const skip = (name: string, title: string, detail: string): CheckResult => ({ name, title, status: 'skip', detail });
export const fail = (name: string, title: string, detail: string, fix: string): CheckResult => ({
  name,
  title,
  status: 'fail',
  detail,
  fix,
});

/** An error's message, or its code when it has none (a refused connection's AggregateError). */
export function reason(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    if (err.message) return err.message;
    if (code) return code;
    if (err instanceof AggregateError && err.errors.length) return reason(err.errors[0]);
  }
  return String(err);
}

/** `scheme://user@host:port/path`: a URL for display, its password and query left out. */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(not a URL)';
  }
}
