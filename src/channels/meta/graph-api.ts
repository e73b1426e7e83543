import { rateLimited } from '../../domain/errors.js';
import { ChannelCredentialsError, ChannelFailedError, ChannelRejectedError } from '../../domain/channels/channel.js';
import { download, request, type HttpAnswer } from '../bots/http.js';

/**
 * Meta's Graph API (https://developers.facebook.com/docs/graph-api/), shared by WhatsApp Cloud API,
 * Messenger and Instagram: `<root>/<version>/<path>` with `Authorization: Bearer <token>`. Every
 * refusal comes as the error envelope `{error: {message, type, code, error_subcode, error_data,
 * fbtrace_id}}`; {@link graphFailure} maps it onto Parley's channel errors in one place.
 */

/** Graph error codes that need their own handling (the rest are refusals: 422 with the text). */
export const GRAPH_CODES = {
  /** The access token is invalid, expired or revoked. */
  oauth: 190,
  /** Unknown error / service temporarily unavailable: the provider failed, not the request. */
  unknown: 1,
  service: 2,
  /** Cloud API throughput: the business phone number sends too fast. */
  throughput: 130429,
  /** Cloud API: too many messages to the same user in a short time (pair rate limit). */
  pairRate: 131056,
  /** Cloud API: something went wrong / service unavailable. */
  cloudUnknown: 131000,
  cloudUnavailable: 131016,
  /** Cloud API: free-form message outside the 24-hour customer-service window. */
  reEngagement: 131047,
} as const;

const RATE_LIMIT_CODES: readonly number[] = [GRAPH_CODES.throughput, GRAPH_CODES.pairRate, 4, 17, 32, 613, 80007];
const PROVIDER_FAILURE_CODES: readonly number[] = [
  GRAPH_CODES.unknown,
  GRAPH_CODES.service,
  GRAPH_CODES.cloudUnknown,
  GRAPH_CODES.cloudUnavailable,
];
/** Meta names no retry delay for throughput errors: the wait Parley asks clients for. */
export const RATE_LIMIT_RETRY_SECONDS = 60;

/** The Graph error envelope, as a refusal (422 unless {@link graphFailure} says otherwise). */
export class GraphError extends ChannelRejectedError {
  constructor(
    readonly httpStatus: number,
    readonly code: number,
    readonly subcode: number | undefined,
    readonly type: string,
    readonly providerMessage: string,
    readonly details: string,
    readonly fbtraceId: string,
  ) {
    super(details && !providerMessage.includes(details) ? `${providerMessage}: ${details}` : providerMessage);
  }

  override detail(): string {
    return `error ${this.code}: ${this.message}`;
  }

  get authFailure(): boolean {
    return this.code === GRAPH_CODES.oauth;
  }
}

/** What a Graph call needs: the installation's root and version, a token, the send deadline. */
export interface GraphTarget {
  root: string;
  version: string;
  token: string;
  timeoutMs: number;
}

export class GraphApi {
  constructor(private readonly target: GraphTarget) {}

  /** `GET /<version>/<path>?<query>`. */
  get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const qs = new URLSearchParams(query).toString();
    return this.call<T>('GET', `${path}${qs ? `?${qs}` : ''}`);
  }

  /** `POST` with a JSON body. */
  post<T>(path: string, body: Record<string, unknown>): Promise<T> {
    return this.call<T>('POST', path, JSON.stringify(body), { 'content-type': 'application/json' });
  }

  /** `POST` with a multipart body (media uploads). */
  postForm<T>(path: string, form: FormData): Promise<T> {
    return this.call<T>('POST', path, form);
  }

  /** A file behind a Graph media URL: those need the same bearer token. */
  download(url: string, maxBytes: number): Promise<{ bytes: Buffer; mime: string }> {
    return download(url, { maxBytes, timeoutMs: this.target.timeoutMs, headers: this.auth() });
  }

  private auth(): Record<string, string> {
    return { authorization: `Bearer ${this.target.token}` };
  }

  private async call<T>(method: string, path: string, body?: string | FormData, headers: Record<string, string> = {}): Promise<T> {
    const url = `${this.target.root}/${this.target.version}/${path.replace(/^\/+/, '')}`;
    const answer = await request(url, { method, headers: { ...this.auth(), ...headers }, body, timeoutMs: this.target.timeoutMs });
    return parseGraphAnswer<T>(answer, `${method} ${path.split('?')[0]}`);
  }
}

/**
 * Runs a Graph call of an integration; a refused token (code 190) marks the integration
 * `auth failure` and the call is refused (422).
 */
export async function guardToken<T>(
  kit: { authFailed(integrationId: number, reason: string): Promise<void> },
  integrationId: number,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof GraphError && err.authFailure) {
      await kit.authFailed(integrationId, err.detail());
      throw new ChannelCredentialsError(`Meta refused the access token: ${err.message}`, err.detail());
    }
    throw err;
  }
}

/** A Graph answer: the JSON of a success, or the error envelope as a GraphError / ChannelFailedError. */
export function parseGraphAnswer<T>(answer: HttpAnswer, what: string): T {
  let parsed: unknown;
  try {
    parsed = answer.text ? JSON.parse(answer.text) : {};
  } catch {
    if (answer.status >= 500 || answer.status < 400) throw new ChannelFailedError(`Graph ${what} answered ${answer.status} without JSON`);
    throw new ChannelRejectedError(`Graph ${what} answered ${answer.status}`);
  }
  const envelope = (parsed as { error?: Record<string, unknown> } | null)?.error;
  if (answer.status < 400 && !envelope) return parsed as T;
  if (typeof envelope !== 'object' || envelope === null) {
    if (answer.status >= 500) throw new ChannelFailedError(`Graph ${what} answered ${answer.status}`);
    throw new ChannelRejectedError(`Graph ${what} answered ${answer.status}`);
  }
  const data = envelope.error_data as { details?: unknown } | undefined;
  const error = new GraphError(
    answer.status,
    Number(envelope.code ?? 0),
    envelope.error_subcode === undefined ? undefined : Number(envelope.error_subcode),
    String(envelope.type ?? ''),
    String(envelope.message ?? `Graph error ${String(envelope.code ?? '')}`),
    typeof data?.details === 'string' ? data.details : '',
    String(envelope.fbtrace_id ?? ''),
  );
  throw graphFailure(error, answer.headers.get('retry-after'));
}

/**
 * Where a Graph error goes: throughput limits -> 429 with Retry-After; Meta's own failures (HTTP
 * 5xx, codes 1, 2, 131000, 131016) -> 502; everything else (policy, unknown template, the 24-hour
 * window, a refused token) stays a GraphError -> 422 with Meta's text. A refused token is also
 * marked by the caller (`authFailure`) so the integration shows `auth failure`.
 */
export function graphFailure(error: GraphError, retryAfterHeader: string | null = null): Error {
  if (RATE_LIMIT_CODES.includes(error.code)) {
    const header = Number(retryAfterHeader);
    const seconds = Number.isInteger(header) && header > 0 && header < 86_400 ? header : RATE_LIMIT_RETRY_SECONDS;
    return rateLimited(seconds, `Meta rate limit (${error.code}): ${error.message}`);
  }
  if (error.httpStatus >= 500 || PROVIDER_FAILURE_CODES.includes(error.code)) {
    return new ChannelFailedError(`Meta failed (${error.code}): ${error.message}`);
  }
  return error;
}
