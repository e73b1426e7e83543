import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChannelFailedError, ChannelRejectedError, type ChannelAdapter } from '../../src/domain/channels/channel.js';

/**
 * A messaging provider on 127.0.0.1 speaking a small bot-API-like protocol, and the channel
 * adapter that talks to it over real HTTP. `POST /send {chat, text, replyTo, file, template}`
 * answers `{ok: true, id}` (or `ids` for a text with a file when `splitFiles` is on); what it
 * answers next is set per test: a refusal or failure with any status and JSON, or no answer at all
 * (the request is held until the test closes the server). `POST /check {chat}` answers
 * `{ok: true, exists}` from `contacts`.
 */
export interface FakeRequest {
  path: string;
  body: Record<string, unknown>;
}

type Mode = { kind: 'ok' } | { kind: 'status'; status: number; body: unknown } | { kind: 'hold' };

export class FakeProvider {
  readonly requests: FakeRequest[] = [];
  readonly contacts = new Set<string>();
  splitFiles = false;
  private mode: Mode = { kind: 'ok' };
  private counter = 0;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeProvider> {
    let provider!: FakeProvider;
    const server = http.createServer((req, res) => provider.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    provider = new FakeProvider(server, `http://127.0.0.1:${port}`);
    return provider;
  }

  /** Sends of the test so far (check requests left out). */
  get sends(): FakeRequest[] {
    return this.requests.filter((r) => r.path === '/send');
  }

  accept(): void {
    this.mode = { kind: 'ok' };
  }

  /** Answer the next sends with this status and JSON body. */
  answer(status: number, body: unknown): void {
    this.mode = { kind: 'status', status, body };
  }

  /** Never answer the next sends. */
  hold(): void {
    this.mode = { kind: 'hold' };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const path = req.url ?? '/';
      this.requests.push({ path, body });
      const json = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (path === '/check') return json(200, { ok: true, exists: this.contacts.has(String(body.chat)) });
      if (path !== '/send') return json(404, { ok: false, description: 'Not Found' });
      if (this.mode.kind === 'hold') return;
      if (this.mode.kind === 'status') return json(this.mode.status, this.mode.body);
      if (this.splitFiles && body.text && body.file)
        return json(200, { ok: true, ids: [`fake-${++this.counter}`, `fake-${++this.counter}`] });
      return json(200, { ok: true, id: `fake-${++this.counter}` });
    });
  }
}

async function call(url: string, body: unknown): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (err) {
    throw new ChannelFailedError(`provider unreachable: ${String(err)}`);
  }
  const payload = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.status >= 500) throw new ChannelFailedError(`provider answered ${res.status}`);
  if (res.status >= 400) throw new ChannelRejectedError(String(payload.description ?? `provider answered ${res.status}`));
  return payload;
}

/** The adapter of `type` that sends through the fake provider; `checkContact: false` leaves that capability out. */
export function fakeAdapter(type: string, provider: FakeProvider, opts: { checkContact?: boolean } = {}): ChannelAdapter {
  const adapter: ChannelAdapter = {
    type,
    async send(_integration, channel, message) {
      const answer = await call(`${provider.url}/send`, {
        chat: channel.externalId,
        text: message.text ?? '',
        replyTo: message.replyToExternalId ?? null,
        file: (message.attachment?.media.url as string | undefined) ?? null,
        fileType: message.attachment?.type ?? null,
        template: message.template ?? null,
      });
      const ids = Array.isArray(answer.ids) ? answer.ids.map(String) : [String(answer.id)];
      return { externalIds: ids };
    },
  };
  if (opts.checkContact !== false) {
    adapter.checkContact = async (_integration, chatId) => (await call(`${provider.url}/check`, { chat: chatId })).exists === true;
  }
  return adapter;
}
