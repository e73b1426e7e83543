import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The Viber REST Bot API on 127.0.0.1, following the documented shapes
 * (https://developers.viber.com/docs/api/rest-bot-api/): `POST /<method>` with JSON and the
 * `X-Viber-Auth-Token` header; HTTP 200 with `{status, status_message, ...}` (0 ok, 2
 * invalidAuthToken, 6 receiverNotSubscribed, 12 tooManyRequests...). `message_token` is a 64-bit
 * integer written as a bare JSON number. Media files are served under `GET /media/<name>` (Viber's
 * CDN in real life), and `sign()` makes the signature header of a callback.
 */
export interface ViberCall {
  token: string;
  method: string;
  body: Record<string, any>;
}

export class FakeViber {
  readonly calls: ViberCall[] = [];
  readonly accounts = new Map<string, { id: string; name: string; uri: string; icon: string }>();
  readonly subscribers = new Map<string, { name: string; avatar: string }>();
  webhook: { url: string; event_types?: string[] } | null = null;
  private readonly media = new Map<string, { bytes: Buffer; mime: string }>();
  private readonly planned: Array<{ method: string; body: Record<string, unknown> }> = [];
  private nextToken = 5741311803571721087n;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeViber> {
    let fake!: FakeViber;
    const server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeViber(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  static sign(token: string, body: string): string {
    return crypto.createHmac('sha256', token).update(body).digest('hex');
  }

  addMedia(name: string, bytes: Buffer, mime: string): string {
    this.media.set(name, { bytes, mime });
    return `${this.url}/media/${name}`;
  }

  /** The next call of `method` answers this body (with HTTP 200, as Viber does). */
  answerNext(method: string, body: Record<string, unknown>): void {
    this.planned.push({ method, body });
  }

  callsOf(method: string): ViberCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = req.url ?? '/';
    const reply = (status: number, text: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type });
      res.end(text);
    };
    if (req.method === 'GET' && url.startsWith('/media/')) {
      const file = this.media.get(decodeURIComponent(url.slice('/media/'.length)));
      if (!file) return reply(404, 'not found', 'text/plain');
      res.writeHead(200, { 'content-type': file.mime, 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }
    const method = url.replace(/^\//, '');
    const token = String(req.headers['x-viber-auth-token'] ?? '');
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    this.calls.push({ token, method, body });
    const ok = (extra: Record<string, unknown> = {}) => reply(200, JSON.stringify({ status: 0, status_message: 'ok', ...extra }));
    const fail = (status: number, message: string) => reply(200, JSON.stringify({ status, status_message: message }));
    if (!token) return fail(2, 'missing_auth_token');
    const account = this.accounts.get(token);
    if (!account) return fail(2, 'invalidAuthToken');
    const plannedAt = this.planned.findIndex((p) => p.method === method);
    if (plannedAt >= 0) return reply(200, JSON.stringify(this.planned.splice(plannedAt, 1)[0]!.body));
    switch (method) {
      case 'get_account_info':
        return ok({ ...account, category: 'Shop', subscribers_count: this.subscribers.size, webhook: this.webhook?.url ?? '' });
      case 'set_webhook':
        if (body.url === '') {
          this.webhook = null;
          return ok();
        }
        if (!/^https:\/\//.test(String(body.url ?? ''))) return fail(1, 'invalidUrl');
        this.webhook = { url: body.url, event_types: body.event_types };
        return ok({ event_types: body.event_types ?? [] });
      case 'send_message': {
        if (!body.sender?.name) return fail(4, 'missingData');
        if (!this.subscribers.has(String(body.receiver))) return fail(6, 'receiverNotSubscribed');
        if (body.type === 'text' && (!body.text || String(body.text).length > 7000)) return fail(3, 'badData');
        if (['picture', 'video', 'file'].includes(body.type) && !/^https?:\/\//.test(String(body.media ?? ''))) return fail(3, 'badData');
        if (body.type === 'file' && !body.file_name) return fail(4, 'missingData');
        const messageToken = (this.nextToken++).toString();
        // A bare 64-bit integer, as Viber writes it.
        return reply(200, `{"status":0,"status_message":"ok","message_token":${messageToken},"chat_hostname":"SN-CHAT-01_"}`);
      }
      case 'get_user_details': {
        const user = this.subscribers.get(String(body.id));
        if (!user) return fail(3, 'badData');
        return ok({ message_token: 1, user: { id: body.id, ...user, country: 'DE', language: 'de', api_version: 10 } });
      }
      case 'get_online':
        return ok({
          users: (body.ids as string[]).map((id) => ({
            id,
            online_status: this.subscribers.has(id) ? 0 : 4,
            online_status_message: this.subscribers.has(id) ? 'online' : 'unavailable',
          })),
        });
      default:
        return fail(3, 'badData');
    }
  }
}
