import WebSocket from 'ws';

/**
 * A bridge of our own speaking the account bridge protocol (docs/channels/bridge.md) over a real
 * WebSocket: it says hello, reports login prompts and session state, sends inbound messages and
 * resends those not acknowledged after a reconnect, uploads media over HTTP with its token, and
 * answers Parley's requests as told (accept, refuse, fail, stay silent). A repeated requestId gets
 * the first answer again without acting twice, as the protocol asks of bridges.
 */
export type Mode = { accept: true } | { refuse: string } | { retryable: string } | { silent: true };
type Json = Record<string, any>;

export class FakeBridge {
  /** Everything Parley sent, in order. */
  readonly received: Json[] = [];
  /** Requests acted upon (each requestId once): what the "provider" got. */
  readonly acted: Json[] = [];
  /** Requests left unanswered (silent mode), by id. */
  readonly unanswered = new Map<number, Json>();
  mode: Mode = { accept: true };
  /** Answers of `check` (exists) and `profile`, and of `login.answer` (refused when it returns a string). */
  contacts = new Set<string>();
  loginCheck: (answer: Json) => string | undefined = () => undefined;
  private readonly answered = new Map<number, Json>();
  private readonly unacked = new Map<string, Json>();
  private readonly ackWaiters = new Map<string, () => void>();
  private listeners: Array<(m: Json) => void> = [];
  private ws!: WebSocket;
  private seq = 0;
  closed!: Promise<{ code: number; reason: string }>;

  private constructor(
    readonly base: string,
    readonly integrationId: number,
    public token: string,
  ) {}

  /** Connects and, unless `hello: false`, says hello and waits for Parley's. */
  static async connect(base: string, integrationId: number, token: string, opts: { hello?: boolean } = {}): Promise<FakeBridge> {
    const bridge = new FakeBridge(base, integrationId, token);
    await bridge.open(opts.hello ?? true);
    return bridge;
  }

  /** Opens a socket; rejects with the HTTP status when the upgrade is refused. */
  private async open(hello: boolean): Promise<void> {
    const ws = new WebSocket(`${this.base.replace(/^http/, 'ws')}/channels/bridge/${this.integrationId}`, {
      headers: { authorization: `Bearer ${this.token}` },
    });
    this.ws = ws;
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
    ws.on('message', (data) => this.onMessage(JSON.parse(data.toString()) as Json));
    if (hello) {
      const greeted = this.next((m) => m.type === 'hello');
      this.send({ type: 'hello', protocol: 1, client: 'fake-bridge/1' });
      await greeted;
    }
  }

  /** A new socket after a drop: hello, then the inbound messages Parley never acknowledged. */
  async reconnect(): Promise<void> {
    await this.open(true);
    const acks = [...this.unacked.values()].map((msg) => {
      const acked = new Promise<void>((resolve) => this.ackWaiters.set(msg.id, resolve));
      this.send(msg);
      return acked;
    });
    await Promise.all(acks);
  }

  /** Drops the connection as a network failure would (no close handshake). */
  async drop(): Promise<void> {
    this.ws.terminate();
    await this.closed;
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close();
    await this.closed;
  }

  send(message: Json | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** Resolves with the next message from Parley that matches. */
  next(match: (m: Json) => boolean): Promise<Json> {
    return new Promise((resolve) => {
      const listener = (m: Json) => {
        if (!match(m)) return;
        this.listeners = this.listeners.filter((l) => l !== listener);
        resolve(m);
      };
      this.listeners.push(listener);
    });
  }

  async login(identity: Json = { login: 'me', externalId: '42' }): Promise<void> {
    this.send({ type: 'identity', ...identity });
    this.send({ type: 'session', state: 'active' });
  }

  /** Sends an inbound message; resolves when Parley acknowledged it. */
  inbound(message: Partial<Json> & { id?: string }): Promise<void> {
    const msg = {
      type: 'inbound',
      id: message.id ?? `in-${++this.seq}`,
      chatId: 'chat-1',
      datetime: Date.UTC(2026, 2, 1, 12),
      sender: { socialId: 'user-1', name: 'Customer' },
      text: 'hello',
      ...message,
    };
    this.unacked.set(msg.id, msg);
    const acked = new Promise<void>((resolve) => this.ackWaiters.set(msg.id, resolve));
    this.send(msg);
    return acked;
  }

  /** Sends an inbound message and drops before Parley can acknowledge... as far as the bridge knows. */
  inboundUnacked(message: Partial<Json> & { id: string }): void {
    const msg = {
      type: 'inbound',
      chatId: 'chat-1',
      datetime: Date.UTC(2026, 2, 1, 12),
      sender: { socialId: 'user-1' },
      text: 'hi',
      ...message,
    };
    this.unacked.set(msg.id, msg);
    this.ignoreAcks.add(msg.id);
    this.send(msg);
  }
  private readonly ignoreAcks = new Set<string>();

  /** Answers a request left unanswered (silent mode) now. */
  answer(requestId: number, result: Json): void {
    this.unanswered.delete(requestId);
    const full = { type: 'result', requestId, ...result };
    this.answered.set(requestId, full);
    this.send(full);
  }

  async uploadMedia(bytes: Buffer, mime: string, name: string, token = this.token): Promise<Response> {
    return fetch(`${this.base}/channels/bridge/${this.integrationId}/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': mime, 'x-file-name': encodeURIComponent(name) },
      body: bytes,
    });
  }

  private onMessage(m: Json): void {
    this.received.push(m);
    if (m.type === 'ack') {
      if (this.ignoreAcks.has(m.id)) return void this.ignoreAcks.delete(m.id);
      this.unacked.delete(m.id);
      this.ackWaiters.get(m.id)?.();
      this.ackWaiters.delete(m.id);
    }
    if (typeof m.requestId === 'number') this.onRequest(m);
    for (const l of [...this.listeners]) l(m);
  }

  private onRequest(m: Json): void {
    const earlier = this.answered.get(m.requestId);
    if (earlier) {
      this.send(earlier);
      return;
    }
    if (this.unanswered.has(m.requestId)) return;
    this.acted.push(m);
    if ('silent' in this.mode) return void this.unanswered.set(m.requestId, m);
    let result: Json;
    if ('refuse' in this.mode) result = { ok: false, refused: this.mode.refuse };
    else if ('retryable' in this.mode) result = { ok: false, retryable: this.mode.retryable };
    else if (m.type === 'check') result = { ok: true, exists: this.contacts.has(m.contact) };
    else if (m.type === 'profile') result = { ok: true, profile: { name: `Name of ${m.socialId}` } };
    else if (m.type === 'login.answer') {
      const refusal = this.loginCheck(m);
      result = refusal ? { ok: false, refused: refusal } : { ok: true };
    } else result = { ok: true, externalIds: [`out-${m.requestId}`] };
    this.answer(m.requestId, result);
  }
}
