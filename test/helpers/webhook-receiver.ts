import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  status: number;
}

/**
 * A local webhook receiver (real HTTP on 127.0.0.1). `respond` decides the status of each request
 * (default 200); `hold` keeps requests open until released.
 */
export class Receiver {
  readonly received: Received[] = [];
  respond: (n: number, body: string) => number = () => 200;
  hold = false;
  /** Holds only the requests whose path this accepts (several endpoints on one host). */
  holdIf: ((path: string) => boolean) | undefined;
  private held: http.ServerResponse[] = [];
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const status = this.respond(this.received.length, body);
      this.received.push({ headers: req.headers, body, status });
      for (const w of this.waiters.filter((w) => this.received.length >= w.n)) w.resolve();
      if (this.hold || this.holdIf?.(req.url ?? '')) return void this.held.push(res);
      if (status >= 300 && status < 400) res.setHeader('location', `${this.url}/redirected`);
      res.statusCode = status;
      res.end(status >= 400 ? 'nope' : 'ok');
    });
  });
  url = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Resolves once `n` requests have arrived. */
  waitFor(n: number): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  release(): void {
    this.hold = false;
    this.holdIf = undefined;
    for (const res of this.held.splice(0)) res.end('late');
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
