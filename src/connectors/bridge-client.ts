import WebSocket from 'ws';
import { parseBridgeMessage } from '../domain/bridge/protocol.js';

/**
 * The Parley side of a connector: one account bridge connection (docs/channels/bridge.md,
 * protocol 1) that any provider library can drive. It says hello, reconnects with a backoff,
 * keeps inbound messages until Parley acknowledges them (and sends them again after a
 * reconnect), answers each request once (a repeated requestId gets the first answer again, one
 * past its deadline is dropped), and uploads media with the bridge token.
 */
export type Json = Record<string, unknown>;
export type RequestResult =
  | { ok: true; externalIds?: string[]; chatId?: string; exists?: boolean; contactId?: string; profile?: Json }
  | { ok: false; refused: string }
  | { ok: false; retryable: string };

export interface ConnectorHandlers {
  /** Parley's requests (`send`, `check`, `profile`, `login.answer`): the connector's answer. */
  onRequest(request: Json): Promise<RequestResult>;
  /** Every (re)connection after hello: the connector reports its login state again. */
  onConnected(): void;
}

export interface BridgeClientOptions {
  url: string;
  integrationId: number;
  token: string;
  client: string;
  log?: (message: string) => void;
  /** This host's clock (tests); Parley's clock is learnt from its hello. */
  now?: () => number;
}

const CLOSE_FOR_GOOD = new Set([4401, 4403, 4406, 4410]);
/** Answers kept for repeated requestIds (Parley resends after a reconnect within a send timeout). */
const REMEMBERED = 10_000;

export class BridgeClient {
  private ws: WebSocket | undefined;
  private ready = false;
  private stopped = false;
  private backoffMs = 1000;
  private readonly unacked = new Map<string, Json>();
  private readonly answers = new Map<number, Json>();
  private readonly working = new Map<number, Promise<Json>>();
  private handlers: ConnectorHandlers | undefined;
  private readonly clock: () => number;
  /** Parley's clock minus ours (from its hello): deadlines are on Parley's clock. */
  private skew = 0;
  private readonly log: (message: string) => void;
  /** Settles when the connection closes for good (token rotated, integration gone, stop()). */
  readonly finished: Promise<{ code: number; reason: string }>;
  private finish!: (result: { code: number; reason: string }) => void;

  constructor(private readonly opts: BridgeClientOptions) {
    this.clock = opts.now ?? Date.now;
    this.log = opts.log ?? (() => undefined);
    this.finished = new Promise((resolve) => (this.finish = resolve));
  }

  start(handlers: ConnectorHandlers): void {
    this.handlers = handlers;
    this.open();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.ws?.close(1000, 'connector stopping');
    this.finish({ code: 1000, reason: 'stopped' });
  }

  /** Sends a protocol message now, or drops it while disconnected (state is reported again on reconnect). */
  send(message: Json): void {
    if (this.ready && this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  /**
   * An inbound message: kept until Parley acknowledges it. One Parley would refuse (it closes the
   * socket for it) is dropped here, or it would be sent again after every reconnect.
   */
  inbound(message: Json & { id: string }): void {
    const full = { ...message, type: 'inbound' };
    const checked = parseBridgeMessage(JSON.stringify(full));
    if (!checked.ok) {
      this.log(`inbound ${String(message.id)} dropped: ${checked.reason}`);
      return;
    }
    this.unacked.set(message.id, full);
    this.send(full);
  }

  /** Stores a file in Parley's storage: its URL for an inbound attachment. */
  async uploadMedia(bytes: Uint8Array, mime: string, name: string): Promise<{ url: string; size: number; name: string }> {
    const base = this.opts.url.replace(/^ws/, 'http').replace(/\/+$/, '');
    const res = await fetch(`${base}/channels/bridge/${this.opts.integrationId}/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${this.opts.token}`, 'content-type': mime, 'x-file-name': encodeURIComponent(name) },
      body: bytes,
    });
    if (!res.ok) throw new Error(`media upload failed: ${res.status} ${await res.text()}`);
    return (await res.json()) as { url: string; size: number; name: string };
  }

  private open(): void {
    const base = this.opts.url.replace(/^http/, 'ws').replace(/\/+$/, '');
    const ws = new WebSocket(`${base}/channels/bridge/${this.opts.integrationId}`, {
      headers: { authorization: `Bearer ${this.opts.token}` },
    });
    this.ws = ws;
    ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', protocol: 1, client: this.opts.client })));
    ws.on('message', (data) => void this.onMessage(JSON.parse(data.toString()) as Json));
    ws.on('unexpected-response', (_req, res) => {
      this.log(`Parley refused the connection: HTTP ${res.statusCode}`);
      if (res.statusCode === 401) {
        this.stopped = true;
        this.finish({ code: 4401, reason: 'wrong bridge token' });
      }
    });
    ws.on('error', (err) => this.log(`connection error: ${err.message}`));
    ws.on('close', (code, reason) => {
      this.ready = false;
      if (this.stopped) return;
      if (CLOSE_FOR_GOOD.has(code)) {
        this.stopped = true;
        this.finish({ code, reason: reason.toString() });
        return;
      }
      const wait = this.backoffMs;
      this.backoffMs = Math.min(this.backoffMs * 2, 60_000);
      this.log(`disconnected (${code}); reconnecting in ${wait} ms`);
      setTimeout(() => !this.stopped && this.open(), wait).unref();
    });
  }

  private async onMessage(m: Json): Promise<void> {
    if (m.type === 'hello') {
      if (typeof m.now === 'number') this.skew = m.now - this.clock();
      this.ready = true;
      this.backoffMs = 1000;
      this.handlers?.onConnected();
      for (const msg of this.unacked.values()) this.send(msg);
      return;
    }
    if (m.type === 'ack') return void this.unacked.delete(String(m.id));
    if (m.type === 'error') return this.log(`Parley: ${String(m.code)} ${String(m.message)}`);
    if (typeof m.requestId === 'number') await this.onRequest(m);
  }

  private async onRequest(m: Json): Promise<void> {
    const id = m.requestId as number;
    const earlier = this.answers.get(id);
    if (earlier) return this.send(earlier);
    const running = this.working.get(id);
    if (running) return void running.then((answer) => this.send(answer));
    // Parley has answered its caller (504) by now: acting would make a message Parley never stores.
    if (typeof m.deadline === 'number' && m.deadline <= this.clock() + this.skew) return;
    const work = (async (): Promise<Json> => {
      let result: RequestResult;
      try {
        if (!this.handlers) throw new Error('the connector has not started');
        result = await this.handlers.onRequest(m);
      } catch (err) {
        result = { ok: false, retryable: err instanceof Error ? err.message : String(err) };
      }
      return { type: 'result', requestId: id, ...result };
    })();
    this.working.set(id, work);
    const answer = await work;
    this.working.delete(id);
    this.answers.set(id, answer);
    if (this.answers.size > REMEMBERED) this.answers.delete(this.answers.keys().next().value as number);
    this.send(answer);
  }
}
