import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
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

/**
 * POSTs one signed body. No redirects are followed (a 3xx is a failure); the whole exchange has
 * `timeoutMs`. Unless private targets are allowed, literal IPs are checked here and hostnames by
 * the agents' `lookup`, which checks every resolved address and connects to the checked one.
 */
export class HttpSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  /** Sends still out, each with the function that cuts it off. */
  private readonly active = new Set<() => void>();

  /**
   * The agents do not cap sockets per host: the limit is per webhook (its leased deliveries,
   * counted in SQL), and a per-host cap made webhooks on one host share one pool, where a slow
   * endpoint's held requests starved a fast one.
   */
  constructor(private readonly opts: { timeoutMs: number; allowPrivate: boolean }) {
    const agentOpts = {
      keepAlive: true,
      maxSockets: Infinity,
      ...(opts.allowPrivate ? {} : { lookup: guardedLookup as unknown as net.LookupFunction }),
    };
    this.httpAgent = new http.Agent(agentOpts);
    this.httpsAgent = new https.Agent(agentOpts);
  }

  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const started = performance.now();
    const done = (statusCode: number | null, error: string | null): SendResult => ({
      statusCode,
      error,
      durationMs: Math.round(performance.now() - started),
    });
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve(done(null, 'invalid url'));
    }
    const host = target.hostname.replace(/^\[|\]$/g, '');
    if (!this.opts.allowPrivate && net.isIP(host) && isBlockedAddress(host)) {
      return Promise.resolve(done(null, `refused address ${host}`));
    }
    const secure = target.protocol === 'https:';
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (r: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.active.delete(abandon);
        resolve(r);
      };
      const abandon = () => {
        finish({ ...done(null, 'abandoned at shutdown'), abandoned: true });
        req.destroy();
      };
      const req = (secure ? https : http).request(target, {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'Parley-Webhooks/1',
          ...headers,
        },
      });
      const timer = setTimeout(() => {
        req.destroy();
        finish(done(null, `timeout after ${this.opts.timeoutMs} ms`));
      }, this.opts.timeoutMs);
      this.active.add(abandon);
      req.on('error', (err) => finish(done(null, err.message || String(err))));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_CAP) chunks.push(chunk.subarray(0, RESPONSE_CAP - size));
          size += chunk.length;
          // Past the cap the rest is not worth reading: drop the connection.
          if (size > RESPONSE_CAP * 64) res.destroy();
        });
        const end = () => {
          const ok = status >= 200 && status < 300;
          const text = Buffer.concat(chunks).toString('utf8');
          finish(done(status, ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}`));
        };
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      });
      req.end(body);
    });
  }

  /** Cuts off every send still out (shutdown): each resolves at once as `abandoned`. */
  abandonAll(): void {
    for (const abandon of [...this.active]) abandon();
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
