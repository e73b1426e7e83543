import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The OK Graph API for groups (Bot API) on 127.0.0.1, after its documented shapes
 * (https://apiok.ru/en/dev/graph_api/bot_api): `<root>/graph/me/<edge>?access_token=…`, POST bodies
 * only as `application/json;charset=utf-8`, refusals as `{error_code, error_msg, error_data}`.
 * Subscriptions (webhook URL or long polling), `updates` with a marker, chat messages, the file
 * upload address and its upload server, and media files.
 */
export interface OkCall {
  method: string;
  edge: string;
  token: string;
  contentType: string;
  query: Record<string, string>;
  body: Record<string, any>;
}

interface Group {
  id: string;
  name: string;
  webhooks: string[];
  longPolling: boolean;
  events: Array<Record<string, unknown>>;
  chats: Set<string>;
}

export class FakeOk {
  readonly calls: OkCall[] = [];
  readonly tokens = new Map<string, Group>();
  readonly sent: Array<{ chat: string; message: Record<string, any>; mid: string }> = [];
  readonly uploads: Array<{ token: string; name: string; bytes: Buffer }> = [];
  private readonly media = new Map<string, { bytes: Buffer; mime: string }>();
  private readonly planned: Array<{ edge: string; code: number; msg: string }> = [];
  private seq = 0;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeOk> {
    let fake!: FakeOk;
    const server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeOk(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  addGroup(token: string, id: string, name: string): Group {
    const group: Group = { id, name, webhooks: [], longPolling: false, events: [], chats: new Set() };
    this.tokens.set(token, group);
    return group;
  }

  addMedia(name: string, bytes: Buffer, mime: string): string {
    this.media.set(name, { bytes, mime });
    return `${this.url}/media/${name}`;
  }

  failNext(edge: string, code: number, msg: string): void {
    this.planned.push({ edge, code, msg });
  }

  callsOf(edge: string): OkCall[] {
    return this.calls.filter((c) => c.edge === edge);
  }

  /** A `MESSAGE_CREATED` notification from a user in a chat of the group (the chat becomes known). */
  messageCreated(group: Group, userId: string, chatId: string, message: Record<string, unknown>): Record<string, unknown> {
    group.chats.add(chatId);
    return {
      sender: { name: 'Olga Petrova', user_id: `user:${userId}` },
      recipient: { chat_id: `chat:${chatId}` },
      message: { mid: `mid.${crypto.randomBytes(12).toString('hex')}`, seq: ++this.seq, ...message },
      timestamp: 1772366400000 + this.seq,
      webhookType: 'MESSAGE_CREATED',
    };
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', this.url);
    const json = (body: unknown, status = 200) => {
      res.writeHead(status, { 'content-type': 'application/json;charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname.startsWith('/media/')) {
      const file = this.media.get(decodeURIComponent(url.pathname.slice(7)));
      if (!file) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': file.mime, 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }
    if (url.pathname === '/upload') {
      const form = await new Request('http://upload/', {
        method: 'POST',
        headers: { 'content-type': String(req.headers['content-type'] ?? '') },
        body: raw,
      })
        .formData()
        .catch(() => undefined);
      const file = form?.get('data');
      if (!(file instanceof Blob)) return json({ error_code: 100, error_msg: 'PARAM : data is missing' });
      const token = `ftk${crypto.randomBytes(8).toString('hex')}`;
      this.uploads.push({ token, name: (file as File).name, bytes: Buffer.from(await file.arrayBuffer()) });
      return json({ token });
    }
    if (!url.pathname.startsWith('/graph/me/')) return void res.writeHead(404).end();
    const edge = url.pathname.slice('/graph/me/'.length);
    const contentType = String(req.headers['content-type'] ?? '');
    const token = url.searchParams.get('access_token') ?? '';
    let body: Record<string, any> = {};
    if (req.method === 'POST') {
      if (!contentType.startsWith('application/json'))
        return json({ error_code: 100, error_msg: 'PARAM : Content-Type must be application/json', error_data: null });
      body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
    }
    this.calls.push({ method: req.method ?? 'GET', edge, token, contentType, query: Object.fromEntries(url.searchParams), body });
    const group = this.tokens.get(token);
    if (!group) return json({ error_code: 102, error_msg: 'PARAM_SESSION_EXPIRED : Session expired', error_data: null });
    const plannedAt = this.planned.findIndex((p) => edge.startsWith(p.edge));
    if (plannedAt >= 0) {
      const [p] = this.planned.splice(plannedAt, 1);
      return json({ error_code: p!.code, error_msg: p!.msg, error_data: null });
    }
    if (edge === 'info' && req.method === 'GET')
      return json({ group_id: `group:${group.id}`, name: group.name, user_id: `user:9${group.id}` });
    if (edge === 'subscribe' && req.method === 'POST') {
      if (typeof body.url === 'string') {
        if (!/^https?:\/\//.test(body.url)) return json({ error_code: 100, error_msg: 'PARAM : url is invalid', error_data: null });
        if (!group.webhooks.includes(body.url)) group.webhooks.push(body.url);
      } else if (body.longPolling === true) group.longPolling = true;
      else return json({ error_code: 100, error_msg: 'PARAM : url or longPolling required', error_data: null });
      return json({ success: true });
    }
    if (edge === 'unsubscribe' && req.method === 'POST') {
      group.webhooks = group.webhooks.filter((u) => u !== body.url);
      return json({ success: true });
    }
    if (edge === 'updates' && req.method === 'GET') {
      if (!group.longPolling) return json({ error_code: 100, error_msg: 'PARAM : no long polling subscription', error_data: null });
      const from = Number(url.searchParams.get('marker') ?? group.events.length);
      const count = Number(url.searchParams.get('count') ?? 100);
      const updates = group.events.slice(from, from + count);
      return json({ marker: String(from + updates.length), updates });
    }
    if (edge === 'fileUploadUrl' && req.method === 'GET') {
      return url.searchParams.get('type')
        ? json({ url: `${this.url}/upload`, file_id: `fid${this.seq}` })
        : json({ error_code: 100, error_msg: 'PARAM : type', error_data: null });
    }
    const chat = /^messages\/chat:(.+)$/.exec(edge);
    if (chat && req.method === 'POST') {
      const m = body.message ?? {};
      if (body.recipient?.chat_id !== `chat:${chat[1]}`)
        return json({ error_code: 100, error_msg: 'PARAM : recipient.chat_id', error_data: null });
      if (!group.chats.has(chat[1]!)) return json({ error_code: 455, error_msg: 'CHAT_NOT_FOUND : chat not found', error_data: null });
      if (!m.text && !m.attachments?.length) return json({ error_code: 100, error_msg: 'PARAM : message is empty', error_data: null });
      if ((m.attachments ?? []).length > 5) return json({ error_code: 100, error_msg: 'PARAM : too many attachments', error_data: null });
      const mid = `mid.${crypto.randomBytes(12).toString('hex')}`;
      this.sent.push({ chat: chat[1]!, message: m, mid });
      return json({ success: true, message_id: mid });
    }
    return json({ error_code: 3, error_msg: 'METHOD : Method does not exist', error_data: null });
  }

  /** Queues a notification on the group's long-polling subscription. */
  queue(group: Group, notification: Record<string, unknown>): void {
    group.events.push(notification);
  }
}
