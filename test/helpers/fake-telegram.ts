import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A Telegram Bot API on 127.0.0.1 following the documented shapes
 * (https://core.telegram.org/bots/api): `POST /bot<token>/<method>` with JSON or multipart bodies,
 * answers `{ok: true, result}` or `{ok: false, error_code, description, parameters?}` with the
 * matching HTTP status; files under `GET /file/bot<token>/<file_path>`. getUpdates honours `offset`
 * (earlier updates are confirmed and forgotten) and refuses to run while a webhook is set (409).
 * A `timeout` long poll with nothing to answer waits (up to that many seconds) for an update; a
 * second getUpdates of the same bot meanwhile ends the waiting one with Telegram's 409 "terminated
 * by other getUpdates request" (counted in `conflicts`).
 */
export interface TgCall {
  token: string;
  method: string;
  params: Record<string, unknown>;
  /** Multipart uploads: field name -> file bytes, name and type. */
  files: Record<string, { bytes: Buffer; name: string; type: string }>;
}

interface StoredTgFile {
  path: string;
  bytes: Buffer;
  mime: string;
}

export class FakeTelegram {
  readonly calls: TgCall[] = [];
  /** Tokens the API knows, with their bot. */
  readonly bots = new Map<string, { id: number; first_name: string; username: string }>();
  /** Chats the bots can write to (user ids), and those that blocked the bot. */
  readonly chats = new Map<string, { first_name: string; last_name?: string; username?: string }>();
  readonly blocked = new Set<string>();
  /** Profile photos by user id: a file id. */
  readonly photos = new Map<number, string>();
  webhook: { url: string; secret_token?: string } | null = null;
  /** getUpdates calls ended by a concurrent one (two pollers of one bot). */
  conflicts = 0;
  /** The long poll waiting per bot token: ends it (with its answer) when an update or a rival comes. */
  private readonly waiting = new Map<string, (conflict: boolean) => void>();
  /** Pending updates per bot token. */
  private readonly updates = new Map<string, Array<Record<string, unknown>>>();
  private readonly files = new Map<string, StoredTgFile>();
  private readonly planned: Array<{ method: string; status: number; body: unknown }> = [];
  private nextUpdateId = 1000;
  private nextMessageId = 500;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeTelegram> {
    let fake!: FakeTelegram;
    const server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeTelegram(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  addBot(token: string, bot: { id: number; username: string; first_name?: string }): void {
    this.bots.set(token, { first_name: bot.username, ...bot });
  }

  /** Revokes a token (BotFather /revoke): every call answers 401 Unauthorized. */
  revoke(token: string): void {
    this.bots.delete(token);
  }

  /** A file the API will hand out by `getFile`. */
  addFile(fileId: string, bytes: Buffer, mime: string, path = `documents/${fileId}`): void {
    this.files.set(fileId, { path, bytes, mime });
  }

  /** Queues an update of the bot for getUpdates; answers it with its update_id. */
  queueUpdate(token: string, update: Record<string, unknown>): Record<string, unknown> {
    const full = { update_id: this.nextUpdateId++, ...update };
    this.queue(token).push(full);
    this.waiting.get(token)?.(false);
    return full;
  }

  private queue(token: string): Array<Record<string, unknown>> {
    let queue = this.updates.get(token);
    if (!queue) {
      queue = [];
      this.updates.set(token, queue);
    }
    return queue;
  }

  /** The next call of `method` answers this instead (status and JSON body). */
  failNext(method: string, status: number, body: unknown): void {
    this.planned.push({ method, status, body });
  }

  rateLimitNext(method: string, retryAfter: number): void {
    this.failNext(method, 429, {
      ok: false,
      error_code: 429,
      description: `Too Many Requests: retry after ${retryAfter}`,
      parameters: { retry_after: retryAfter },
    });
  }

  callsOf(method: string): TgCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = req.url ?? '/';
    const json = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url);
    if (req.method === 'GET' && fileMatch) {
      const file = [...this.files.values()].find((f) => f.path === decodeURIComponent(fileMatch[2]!));
      if (!this.bots.has(fileMatch[1]!) || !file) return json(404, { ok: false, error_code: 404, description: 'Not Found' });
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }
    const m = /^\/bot([^/]+)\/(\w+)$/.exec(url);
    if (!m) return json(404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, token, method] = m as unknown as [string, string, string];
    const call: TgCall = { token, method, params: {}, files: {} };
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('multipart/form-data')) {
      const form = await new Response(body, { headers: { 'content-type': type } }).formData();
      for (const [key, value] of form.entries()) {
        if (typeof value === 'string') call.params[key] = /^[[{]/.test(value) ? JSON.parse(value) : value;
        else call.files[key] = { bytes: Buffer.from(await value.arrayBuffer()), name: value.name, type: value.type };
      }
    } else if (body.length) {
      call.params = JSON.parse(body.toString('utf8'));
    }
    this.calls.push(call);
    const bot = this.bots.get(token);
    if (!bot) return json(401, { ok: false, error_code: 401, description: 'Unauthorized' });
    const plannedAt = this.planned.findIndex((p) => p.method === method);
    if (plannedAt >= 0) {
      const [planned] = this.planned.splice(plannedAt, 1);
      return json(planned!.status, planned!.body);
    }
    const ok = (result: unknown) => json(200, { ok: true, result });
    const bad = (status: number, description: string) => json(status, { ok: false, error_code: status, description });
    const p = call.params;
    const chatId = String(p.chat_id ?? '');
    const sent = (extra: Record<string, unknown>) => {
      if (!this.chats.has(chatId)) return bad(400, 'Bad Request: chat not found');
      if (this.blocked.has(chatId)) return bad(403, 'Forbidden: bot was blocked by the user');
      return ok({ message_id: this.nextMessageId++, date: 1772366400, chat: { id: Number(chatId), type: 'private' }, ...extra });
    };
    switch (method) {
      case 'getMe':
        return ok({ is_bot: true, can_join_groups: true, ...bot });
      case 'setWebhook':
        if (!/^https?:\/\//.test(String(p.url ?? '')))
          return bad(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
        this.webhook = { url: String(p.url), secret_token: p.secret_token as string | undefined };
        return ok(true);
      case 'deleteWebhook':
        this.webhook = null;
        return ok(true);
      case 'getUpdates': {
        if (this.webhook)
          return bad(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first");
        const offset = Number(p.offset ?? 0);
        // Updates before the offset are confirmed: Telegram forgets them.
        const queue = this.queue(token);
        while (queue.length && Number(queue[0]!.update_id) < offset) queue.shift();
        this.waiting.get(token)?.(true);
        const timeout = Number(p.timeout ?? 0);
        if (!queue.length && timeout > 0) {
          const conflict = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => end(false), timeout * 1000);
            const end = (c: boolean) => {
              clearTimeout(timer);
              if (this.waiting.get(token) === end) this.waiting.delete(token);
              resolve(c);
            };
            this.waiting.set(token, end);
          });
          if (conflict) {
            this.conflicts++;
            return bad(409, 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running');
          }
        }
        return ok(queue.slice(0, Number(p.limit ?? 100)));
      }
      case 'getFile': {
        const file = this.files.get(String(p.file_id));
        if (!file) return bad(400, 'Bad Request: invalid file_id');
        return ok({ file_id: p.file_id, file_unique_id: `u${p.file_id}`, file_size: file.bytes.length, file_path: file.path });
      }
      case 'getUserProfilePhotos': {
        const fileId = this.photos.get(Number(p.user_id));
        return ok({
          total_count: fileId ? 1 : 0,
          photos: fileId
            ? [
                [
                  { file_id: `${fileId}-small`, width: 160, height: 160 },
                  { file_id: fileId, width: 640, height: 640 },
                ],
              ]
            : [],
        });
      }
      case 'getChat': {
        const chat = this.chats.get(chatId);
        if (!chat) return bad(400, 'Bad Request: chat not found');
        return ok({ id: Number(chatId), type: 'private', ...chat });
      }
      case 'sendMessage': {
        const text = String(p.text ?? '');
        if (!text.trim()) return bad(400, 'Bad Request: message text is empty');
        if (text.length > 4096) return bad(400, 'Bad Request: message is too long');
        return sent({ text });
      }
      case 'sendPhoto':
      case 'sendDocument':
      case 'sendVideo': {
        const field = { sendPhoto: 'photo', sendDocument: 'document', sendVideo: 'video' }[method];
        if (!call.files[field] && typeof p[field] !== 'string') return bad(400, `Bad Request: there is no ${field} in the request`);
        if (String(p.caption ?? '').length > 1024) return bad(400, 'Bad Request: message caption is too long');
        return sent(p.caption ? { caption: p.caption } : {});
      }
      default:
        return bad(404, 'Not Found');
    }
  }
}
