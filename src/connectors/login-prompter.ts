import type { BridgeClient, Json, RequestResult } from './bridge-client.js';

type Kind = 'phone' | 'code' | 'password';

/**
 * A connector's login prompts, answered from Parley's agent app: the library asks (a phone, a code,
 * the 2FA password) and waits; the prompt goes to Parley as `login.prompt` (or `login.qr`), and the
 * owner's `login.answer` resolves it. The current prompt is announced again after a reconnect.
 */
export class LoginPrompter {
  private current: Json | undefined;
  private waiting: { kind: Kind; resolve: (value: string) => void } | undefined;
  private lastError: string | undefined;

  constructor(private readonly bridge: BridgeClient) {}

  qr(data: string, expiresAt: number): void {
    this.current = { type: 'login.qr', data, expiresAt };
    this.bridge.send(this.current);
  }

  ask(kind: Kind): Promise<string> {
    this.current = { type: 'login.prompt', kind, ...(this.lastError ? { error: this.lastError } : {}) };
    this.lastError = undefined;
    this.bridge.send(this.current);
    return new Promise((resolve) => (this.waiting = { kind, resolve }));
  }

  /** The library refused the last answer: the next prompt says why. */
  rejectLast(reason: string): void {
    this.lastError = reason;
  }

  answer(request: Json): RequestResult {
    const kind = request.kind;
    if (!this.waiting || kind !== this.waiting.kind) {
      return {
        ok: false,
        refused: this.waiting
          ? `The bridge waits for the ${this.waiting.kind}, not the ${String(kind)}`
          : 'The bridge is not waiting for an answer',
      };
    }
    const value = String(request.value ?? '').trim();
    if (!value) return { ok: false, refused: `The ${kind} is empty` };
    const { resolve } = this.waiting;
    this.waiting = undefined;
    resolve(value);
    return { ok: true };
  }

  announce(): void {
    if (this.current) this.bridge.send(this.current);
  }

  clear(): void {
    this.current = undefined;
    this.waiting = undefined;
  }
}
