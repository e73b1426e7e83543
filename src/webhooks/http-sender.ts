import net from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { guardedLookup, isBlockedAddress } from '../net/address-guard.js';

export interface SendResult {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** Cut off by {@link HttpSender.abandonAll} (shutdown): no outcome, the delivery is sent again. */
  abandoned?: true;
}

/** Response bodies are read up to this many bytes (kept in the log on failure). */
export const RESPONSE_CAP = 1024;

/** A webhook URL as a request needs it, or why it cannot be sent to. */
type Target = { origin: string; path: string; host: string } | { refused: string };

/** Sent with every delivery (undici adds `host` and `content-length`). */
const FIXED_HEADERS = ['content-type', 'application/json', 'user-agent', 'Parley-Webhooks/1'];

/** Parsed URLs kept (a worker sends to the same few endpoints again and again). */
const TARGETS_KEPT = 1000;

/**
 * POSTs one signed body. No redirects are followed (a 3xx is a failure); the whole exchange has
 * `timeoutMs`. Unless private targets are allowed, literal IPs are checked here and hostnames by
 * the connector's `lookup`, which checks every resolved address and connects to the checked one.
 *
 * undici's dispatcher with a handler of our own: it costs about half the CPU per request of
 * node:http's agent (docs/performance.md, "What carries the figures"), and the response is read
 * into at most RESPONSE_CAP bytes without a stream.
 */
export class HttpSender {
  private readonly agent: Agent;
  /** Sends still out, each with the function that cuts it off. */
  private readonly active = new Set<() => void>();
  private readonly targets = new Map<string, Target>();

  /**
   * No cap on connections per origin: the limit is per webhook (its leased deliveries, counted in
   * SQL), and a per-host cap made webhooks on one host share one pool, where a slow endpoint's held
   * requests starved a fast one. No pipelining: a POST waits for nothing but its own connection.
   */
  constructor(private readonly opts: { timeoutMs: number; allowPrivate: boolean }) {
    this.agent = new Agent({
      connections: null,
      pipelining: 1,
      // The exchange's own timer (below) bounds every phase; these only must not cut it shorter.
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
      connect: {
        timeout: opts.timeoutMs,
        ...(opts.allowPrivate ? {} : { lookup: guardedLookup as unknown as net.LookupFunction }),
      },
    });
  }

  private target(url: string): Target {
    let t = this.targets.get(url);
    if (t) return t;
    try {
      const u = new URL(url);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') t = { refused: 'invalid url' };
      else {
        const host = u.hostname.replace(/^\[|\]$/g, '');
        t = { origin: u.origin, path: `${u.pathname}${u.search}`, host };
      }
    } catch {
      t = { refused: 'invalid url' };
    }
    if (this.targets.size >= TARGETS_KEPT) this.targets.clear();
    this.targets.set(url, t);
    return t;
  }

  /**
   * `headers`: names and values in turn (lower case names); `body`: the bytes to send, which one
   * event's deliveries may share.
   */
  send(url: string, headers: string[], body: Buffer | string): Promise<SendResult> {
    const started = performance.now();
    const done = (statusCode: number | null, error: string | null): SendResult => ({
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    const target = this.target(url);
    if ('refused' in target) return Promise.resolve(done(null, target.refused));
    if (!this.opts.allowPrivate && net.isIP(target.host) && isBlockedAddress(target.host)) {
      return Promise.resolve(done(null, `refused address ${target.host}`));
    }
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      let controller: Dispatcher.DispatchController | undefined;
      let status = 0;
      let size = 0;
      const chunks: Buffer[] = [];
      const cut = () => {
        if (controller && !controller.aborted) controller.abort(new Error('cut off'));
      };
      const finish = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.active.delete(abandon);
        resolve(r);
      };
      const abandon = () => {
        finish({ ...done(null, 'abandoned at shutdown'), abandoned: true });
        cut();
      };
      const answered = () => {
        const ok = status >= 200 && status < 300;
        const text = Buffer.concat(chunks).toString('utf8');
        finish(done(status, ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}`));
      };
      const timer = setTimeout(() => {
        finish(done(null, `timeout after ${this.opts.timeoutMs} ms`));
        cut();
      }, this.opts.timeoutMs);
      this.active.add(abandon);
      this.agent.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers: [...FIXED_HEADERS, ...headers], body },
        {
          onRequestStart(c) {
            controller = c;
            // Timed out or abandoned before a connection took it.
            if (settled) cut();
          },
          onResponseStart(_c, statusCode) {
            status = statusCode;
          },
          onResponseData(_c, chunk) {
            if (size < RESPONSE_CAP) chunks.push(chunk.subarray(0, RESPONSE_CAP - size));
            size += chunk.length;
            // Past the cap the rest is not worth reading: the answer is what was read; drop the connection.
            if (size > RESPONSE_CAP * 64) {
              answered();
              cut();
            }
          },
          onResponseEnd() {
            answered();
          },
          onResponseError(_c, err) {
            finish(done(null, err.message || String(err)));
          },
        },
      );
    });
  }

  /** Cuts off every send still out (shutdown): each resolves at once as `abandoned`. */
  abandonAll(): void {
    for (const abandon of [...this.active]) abandon();
  }

  close(): void {
    void this.agent.destroy().catch(() => {});
  }
}
