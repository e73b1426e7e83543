import { rateLimited } from '../../domain/errors.js';
import { ChannelCredentialsError, ChannelFailedError, ChannelRejectedError } from '../../domain/channels/channel.js';
import { retryFits, type BotKit } from '../bots/bot-kit.js';
import { request } from '../bots/http.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * What the social network adapters (VK `social2_group`, OK `social3`) share: their HTTP calls
 * (form-encoded or JSON, answers always JSON), the provider's refusal as one error class that says
 * what kind of refusal it is, and the rules every call follows with a refusal (see
 * {@link guardCall}). An adapter is then the mapping between the provider's shapes and Parley's.
 */

/** What a provider's refusal means for Parley. */
export type RefusalKind =
  /** The token is revoked or wrong: the integration becomes `auth failure`. */
  | 'auth'
  /** Too many requests: retried once when the wait fits the send timeout, else 429. */
  | 'rate'
  /** Anything else the provider refused (the user does not allow messages, bad parameter): 422. */
  | 'refused';

export class ProviderRefusal extends ChannelRejectedError {
  constructor(
    readonly provider: string,
    readonly code: number | string,
    readonly reason: string,
    readonly kind: RefusalKind,
  ) {
    super(`${provider} refused: ${reason} (${code})`);
  }

  override detail(): string {
    return `error ${this.code}: ${this.reason}`;
  }
}

/** How long Parley waits before its one retry of a rate-limited call (VK and OK send no retry-after). */
export const RATE_LIMIT_WAIT_SECONDS = 1;

/**
 * Runs a provider call: a refused token flips the integration to `auth failure` (and the caller
 * gets a 422 naming the reason); a rate refusal is retried once after a short wait when that still
 * fits the send timeout, else answered as 429 `rate_limited`; other refusals stay 422.
 */
export async function guardCall<T>(kit: BotKit, integration: { id: number }, started: number, call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ProviderRefusal)) throw err;
      if (err.kind === 'auth') {
        await kit.authFailed(integration.id, err.detail());
        throw new ChannelCredentialsError(`${err.provider} refused the token: ${err.reason}`, err.detail());
      }
      if (err.kind === 'rate') {
        if (attempt === 0 && retryFits(RATE_LIMIT_WAIT_SECONDS, started, kit.config.sendTimeoutMs)) {
          await kit.wait(RATE_LIMIT_WAIT_SECONDS * 1000);
          continue;
        }
        throw rateLimited(RATE_LIMIT_WAIT_SECONDS, `${err.provider} rate limit: ${err.reason}`);
      }
      throw err;
    }
  }
}

/**
 * JSON from a provider, without NUL characters in its strings: they mean nothing in a message or a
 * name, and PostgreSQL refuses them in text columns. Throws SyntaxError when it is no JSON.
 */
export function parseProviderJson(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown) =>
    typeof value === 'string' && value.includes('\u0000') ? value.replaceAll('\u0000', '') : value,
  );
}

/** Reads a provider's answer as JSON: a 5xx or a body that is no JSON is the provider failing (502). */
export function jsonAnswer(provider: string, what: string, answer: { status: number; text: string }): unknown {
  if (answer.status >= 500) throw new ChannelFailedError(`${provider} ${what} answered ${answer.status}`);
  try {
    return parseProviderJson(answer.text);
  } catch {
    throw new ChannelFailedError(`${provider} ${what} answered ${answer.status} without JSON`);
  }
}

/** Text fields only: what a form-encoded body may carry (numbers and booleans written as VK reads them). */
export type FormParams = Record<string, string | number | boolean | undefined>;

/** `application/x-www-form-urlencoded` POST; `undefined` values are left out. */
export async function postForm(url: string, params: FormParams, opts: { timeoutMs: number; signal?: AbortSignal }) {
  const body = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined) continue;
    body.set(key, typeof value === 'boolean' ? (value ? '1' : '0') : String(value));
  }
  return request(url, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: body.toString(),
    timeoutMs: opts.timeoutMs,
    signal: opts.signal,
  });
}

/** A file POSTed as `multipart/form-data` to an upload server the provider named. */
export async function uploadFile(url: string, field: string, file: { bytes: Buffer; name: string; mime: string }, timeoutMs: number) {
  const form = new FormData();
  form.set(field, new Blob([file.bytes], { type: file.mime }), file.name);
  return request(url, { body: form, timeoutMs });
}

/** `<PARLEY_PUBLIC_URL><path>` where providers reach Parley, or undefined without a public address. */
export function publicAddress(kit: Pick<BotKit, 'config'>, path: string): string | undefined {
  const base = kit.config.publicUrl?.replace(/\/+$/, '');
  return base ? `${base}${path}` : undefined;
}

export const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
export const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
