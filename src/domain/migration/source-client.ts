/**
 * The HTTP client `parley migrate` reads a source server with (docs/migrate.md): a gentle, patient
 * client of someone else's server. Requests are spaced to `rate` per second with at most
 * `concurrency` in flight; 429 waits for `Retry-After`, 5xx, timeouts and connection failures back
 * off and are tried again; an expired access token is renewed once with the refresh token; an
 * answer larger than `maxBody` is refused without being held in memory.
 */

export interface SourceClientOptions {
  /** Base URL of the source, without a version (`https://inbox.example.com`). */
  base: string;
  /** An API key or an access token of the source account's owner. */
  token: string;
  /** Renews `token` at `POST /v1.3/auth/tokens` when the source answers 401. */
  refreshToken?: string;
  /** Requests per second. */
  rate: number;
  concurrency: number;
  timeoutMs: number;
  /** Tries of one request after the first (429, 5xx, timeouts). */
  retries: number;
  /** Largest answer read, in bytes. */
  maxBody: number;
  /** Waits (injected by tests so that no test waits for real time). */
  sleep?: (ms: number) => Promise<void>;
  signal?: AbortSignal;
}

/** The source refused or failed a request for good. */
export class SourceError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'SourceError';
  }
}

/** A request stopped because the run was interrupted (SIGINT). */
export class InterruptedError extends Error {
  constructor() {
    super('interrupted');
    this.name = 'InterruptedError';
  }
}

export interface SourceAnswer {
  status: number;
  body: unknown;
  headers: Headers;
}

/** Longest wait one Retry-After is trusted for: a source asking for an hour gets a minute at a time. */
const MAX_RETRY_AFTER_MS = 60_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 30_000;

export class SourceClient {
  readonly base: string;
  private token: string;
  private refreshToken: string | undefined;
  private refreshing: Promise<void> | undefined;
  private nextSlot = 0;
  /** Until when a 429 asked every request to wait (Unix ms). */
  private pausedUntil = 0;
  private active = 0;
  private readonly queue: Array<() => void> = [];
  private readonly sleep: (ms: number) => Promise<void>;
  /** Counts for the summary; `byKind`: requests the source answered (tries included), per {@link requestKind}. */
  readonly stats = { requests: 0, retries: 0, rateLimited: 0, refreshed: 0, byKind: {} as Record<string, number> };

  constructor(private readonly opts: SourceClientOptions) {
    this.base = opts.base.replace(/\/+$/, '');
    this.token = opts.token;
    this.refreshToken = opts.refreshToken;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** The access token in use (renewed ones included): attachments on the source's origin send it too. */
  currentToken(): string {
    return this.token;
  }

  /** GET or POST a JSON path of the source (`/v1.3/managers`); a 2xx answer's body, or SourceError. */
  async json(method: 'GET' | 'POST', path: string, body?: unknown): Promise<SourceAnswer> {
    const answer = await this.request(method, path, body);
    if (answer.status >= 200 && answer.status < 300) return answer;
    throw new SourceError(`${method} ${path}: the source answered ${answer.status}${describe(answer.body)}`, answer.status);
  }

  /**
   * One request with the retries and waits described above; answers any final status (the caller
   * decides what a 404 means). Throws SourceError when the source stays unreachable or failing.
   */
  async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<SourceAnswer> {
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      this.checkInterrupted();
      let answer: SourceAnswer | undefined;
      let failure: string | undefined;
      try {
        answer = await this.slot(() => this.once(method, path, body));
      } catch (err) {
        if (err instanceof InterruptedError || err instanceof SourceError) throw err;
        failure = (err as Error).name === 'TimeoutError' ? `no answer in ${this.opts.timeoutMs} ms` : (err as Error).message;
      }
      if (answer?.status === 401 && this.refreshToken && !refreshed) {
        refreshed = true;
        await this.renew();
        attempt--;
        continue;
      }
      if (answer && answer.status !== 429 && answer.status < 500) return answer;
      if (attempt >= this.opts.retries) {
        throw new SourceError(
          `${method} ${path}: ${failure ?? `the source answered ${answer?.status}`} after ${attempt + 1} tries`,
          answer?.status ?? null,
        );
      }
      this.stats.retries++;
      let wait = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
      if (answer?.status === 429) {
        this.stats.rateLimited++;
        const asked = retryAfterMs(answer.headers.get('retry-after'), Date.now());
        if (asked !== undefined) wait = Math.min(MAX_RETRY_AFTER_MS, asked);
        // Every request waits, not only this one: the source asked the client to slow down.
        this.pausedUntil = Math.max(this.pausedUntil, Date.now() + wait);
        this.nextSlot = Math.max(this.nextSlot, this.pausedUntil);
      }
      await this.sleep(wait);
    }
  }

  private checkInterrupted(): void {
    if (this.opts.signal?.aborted) throw new InterruptedError();
  }

  /** Waits for a free place among `concurrency` and for the next `rate` slot, then runs `fn`. */
  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.opts.concurrency) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.active++;
    try {
      await this.turn();
      this.checkInterrupted();
      return await fn();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }

  /**
   * Waits for this request's turn: turns are `1000 / rate` ms apart, never earlier than asked and
   * never made up for later (a source counting requests per fixed window sees at most `rate` a
   * second). A request whose turn came during a 429's pause goes after it, in a turn of its own:
   * otherwise the requests already waiting for their turns would meet the same 429.
   */
  private async turn(): Promise<void> {
    const interval = 1000 / this.opts.rate;
    const now = Date.now();
    const at = Math.max(now, this.nextSlot);
    this.nextSlot = at + interval;
    if (at > now) await this.sleep(at - now);
    if (this.pausedUntil <= at) return;
    const resume = Math.max(this.nextSlot, this.pausedUntil);
    this.nextSlot = resume + interval;
    await this.sleep(Math.max(0, resume - Date.now()));
  }

  private async once(method: string, path: string, body: unknown): Promise<SourceAnswer> {
    this.stats.requests++;
    const kind = requestKind(path);
    this.stats.byKind[kind] = (this.stats.byKind[kind] ?? 0) + 1;
    const signals = [AbortSignal.timeout(this.opts.timeoutMs), ...(this.opts.signal ? [this.opts.signal] : [])];
    const res = await fetch(this.base + path, {
      method,
      headers: {
        authorization: `Bearer ${this.token}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.any(signals),
      redirect: 'error',
    }).catch((err: unknown) => {
      if (this.opts.signal?.aborted) throw new InterruptedError();
      throw err;
    });
    const text = await readCapped(res, this.opts.maxBody, `${method} ${path}`);
    let parsed: unknown;
    if (text.length) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    return { status: res.status, body: parsed, headers: res.headers };
  }

  private renew(): Promise<void> {
    this.refreshing ??= (async () => {
      this.stats.refreshed++;
      const res = await this.slot(() =>
        fetch(`${this.base}/v1.3/auth/tokens`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ refreshToken: this.refreshToken }),
          signal: AbortSignal.timeout(this.opts.timeoutMs),
        }),
      );
      const body = (await res.json().catch(() => undefined)) as
        | { accessToken?: { token?: unknown }; refreshToken?: { token?: unknown } }
        | undefined;
      const access = body?.accessToken?.token;
      if (res.status !== 200 || typeof access !== 'string') {
        throw new SourceError(`the source refused the refresh token (${res.status})`, res.status);
      }
      this.token = access;
      if (typeof body?.refreshToken?.token === 'string') this.refreshToken = body.refreshToken.token;
    })().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }
}

/**
 * What a request reads, for the summary's request counts (docs/migrate.md "How long it takes"):
 * the cost of a run is its request count over `--rate`.
 */
function requestKind(path: string): string {
  const [route = '', query] = path.split('?');
  if (/\/history\//.test(route)) return 'history pages';
  if (/\/messaging\/[^/]+\/sources\/?$/.test(route)) return 'channel lists';
  if (/\/messaging\/sources\/?$/.test(route)) return 'channel lists in bulk';
  if (/\/customers\/[^/]+\/?$/.test(route)) return 'customers';
  if (/\/customers\/?$/.test(route) && query) return 'customers in bulk';
  if (/\/leads\//.test(route)) return 'lead lists';
  return 'other';
}

/** `Retry-After` in ms: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The body as text, refused (SourceError) past `max` bytes without reading the rest. */
async function readCapped(res: Response, max: number, what: string): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel();
    throw new SourceError(`${what}: the answer (${declared} bytes) is larger than ${max} bytes`, res.status);
  }
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new SourceError(`${what}: the answer is larger than ${max} bytes`, res.status);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function describe(body: unknown): string {
  if (body && typeof body === 'object' && 'message' in body && typeof body.message === 'string') return `: ${body.message.slice(0, 200)}`;
  return '';
}
