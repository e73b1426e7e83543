import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The VK API on 127.0.0.1, following the documented protocol (https://dev.vk.com/en/api/api-requests):
 * `POST /method/<name>` with a form-encoded body (`access_token`, `v` and the parameters; a JSON
 * body carries nothing VK reads) answering `{response}` or `{error: {error_code, error_msg,
 * request_params}}` with HTTP 200. Also VK's other servers: the Bots Long Poll server
 * (`GET /lp/<group>?act=a_check&key&ts&wait` -> `{ts, updates}` or `{failed}`), the upload servers
 * (multipart), media files, and Callback API bodies signed with the `secret_key` a client
 * registered through `groups.addCallbackServer`.
 */
export interface VkCall {
  method: string;
  contentType: string;
  params: Record<string, string>;
}

interface Community {
  id: number;
  name: string;
  screen_name: string;
  photo_200: string;
  confirmation: string;
  servers: Array<{ id: number; url: string; title: string; secret_key: string; settings: Record<string, string> }>;
  longPoll: { enabled: boolean; settings: Record<string, string>; key: string; events: Array<Record<string, unknown>>; base: number };
}

export class FakeVk {
  readonly calls: VkCall[] = [];
  /** Community tokens -> their community. */
  readonly tokens = new Map<string, Community>();
  readonly users = new Map<
    number,
    { first_name: string; last_name: string; screen_name: string; photo_200: string; allowsMessages: boolean }
  >();
  readonly sent: Array<{ peer_id: string; random_id: string; message?: string; attachment?: string; reply_to?: string; id: number }> = [];
  readonly uploads: Array<{ kind: string; name: string; bytes: Buffer }> = [];
  readonly objects = new Map<string, Record<string, unknown>>();
  private readonly media = new Map<string, { bytes: Buffer; mime: string }>();
  private readonly flaky = new Set<string>();
  private readonly planned: Array<{ method: string; code: number; msg: string }> = [];
  private readonly plannedPolls: Array<{ group: number; body: Record<string, unknown> }> = [];
  private nextId = 500;
  /** Methods whose calls are carried out but left unanswered (the answer lost on the way back). */
  private readonly unanswered = new Set<string>();
  private readonly callWaiters = new Set<() => void>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeVk> {
    let fake!: FakeVk;
    const server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeVk(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  get apiUrl(): string {
    return `${this.url}/method`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  addCommunity(token: string, id: number, screenName: string): Community {
    const community: Community = {
      id,
      name: `Community ${id}`,
      screen_name: screenName,
      photo_200: `https://sun.userapi.example/c${id}.jpg`,
      confirmation: `conf${id.toString(16)}`,
      servers: [],
      longPoll: { enabled: false, settings: {}, key: crypto.randomBytes(8).toString('hex'), events: [], base: 1 },
    };
    this.tokens.set(token, community);
    return community;
  }

  addMedia(name: string, bytes: Buffer, mime: string): string {
    this.media.set(name, { bytes, mime });
    return `${this.url}/media/${name}`;
  }

  /** A media file whose first download fails with 503 (VK's CDN having a moment). */
  addFlakyMedia(name: string, bytes: Buffer, mime: string): string {
    this.flaky.add(name);
    return this.addMedia(name, bytes, mime);
  }

  /** The next call of `method` answers this VK error. */
  failNext(method: string, code: number, msg: string): void {
    this.planned.push({ method, code, msg });
  }

  /** The community's next long poll answers this body (e.g. `{failed: 1, ts}`). */
  pollAnswersNext(community: Community, body: Record<string, unknown>): void {
    this.plannedPolls.push({ group: community.id, body });
  }

  callsOf(method: string): VkCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /**
   * Calls of `method` are carried out (a `messages.send` delivers its message) but never answered,
   * until `answerAgain`: the caller is left waiting, as when VK's answer is lost on the way back.
   */
  holdAnswers(method: string): void {
    this.unanswered.add(method);
  }

  answerAgain(method: string): void {
    this.unanswered.delete(method);
  }

  /** Resolves once `count` calls of `method` have reached the fake (answered or not). */
  async waitForCalls(method: string, count: number): Promise<void> {
    while (this.callsOf(method).length < count) await new Promise<void>((resolve) => this.callWaiters.add(resolve));
  }

  /** An event as VK delivers it (Callback API body, or an item of the long poll's `updates`). */
  event(community: Community, type: string, object: Record<string, unknown>): Record<string, unknown> {
    return { group_id: community.id, type, event_id: crypto.randomBytes(20).toString('hex'), v: '5.199', object };
  }

  /** The Callback API body VK posts to a registered server: the event plus the server's secret. */
  callback(community: Community, url: string, event: Record<string, unknown>): string {
    const server = community.servers.find((s) => s.url === url);
    return JSON.stringify({ ...event, ...(server?.secret_key ? { secret: server.secret_key } : {}) });
  }

  /** Queues an event on the community's Bots Long Poll server. */
  queue(community: Community, event: Record<string, unknown>): void {
    community.longPoll.events.push(event);
  }

  /** The `ts` the next event of the community's queue will have. */
  nextTs(community: Community): number {
    return community.longPoll.base + community.longPoll.events.length;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', this.url);
    const json = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname.startsWith('/media/')) {
      const name = decodeURIComponent(url.pathname.slice('/media/'.length));
      if (this.flaky.delete(name)) return void res.writeHead(503).end();
      const file = this.media.get(name);
      if (!file) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': file.mime, 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }
    if (url.pathname.startsWith('/lp/')) return json(this.longPoll(Number(url.pathname.slice(4)), url.searchParams));
    if (url.pathname.startsWith('/upload/')) return json(await this.upload(url.pathname.slice(8), req, raw));
    if (!url.pathname.startsWith('/method/') || req.method !== 'POST') return void res.writeHead(404).end();
    const method = url.pathname.slice('/method/'.length);
    const contentType = String(req.headers['content-type'] ?? '');
    // VK reads parameters from the query or a form body; a JSON body carries none.
    const params: Record<string, string> = Object.fromEntries(url.searchParams);
    if (contentType.startsWith('application/x-www-form-urlencoded'))
      Object.assign(params, Object.fromEntries(new URLSearchParams(raw.toString('utf8'))));
    this.calls.push({ method, contentType, params });
    const error = (code: number, msg: string) =>
      json({ error: { error_code: code, error_msg: msg, request_params: [{ key: 'method', value: method }] } });
    if (!params.access_token) return error(5, 'User authorization failed: no access_token passed.');
    const community = this.tokens.get(params.access_token);
    if (!community) return error(5, 'User authorization failed: invalid access_token (4).');
    if (!params.v) return error(8, 'Invalid request: v (version) is required');
    const plannedAt = this.planned.findIndex((p) => p.method === method);
    if (plannedAt >= 0) {
      const [p] = this.planned.splice(plannedAt, 1);
      return error(p!.code, p!.msg);
    }
    const answer = this.method(community, method, params);
    const waiters = [...this.callWaiters];
    this.callWaiters.clear();
    for (const wake of waiters) wake();
    if (this.unanswered.has(method)) return;
    if (answer && typeof answer === 'object' && 'error' in answer) return error(...(answer.error as [number, string]));
    return json({ response: answer });
  }

  private method(c: Community, method: string, p: Record<string, string>): unknown {
    const groupOk = () => p.group_id === String(c.id);
    const ok = (value: unknown) => value;
    const fail = (code: number, msg: string) => ({ error: [code, msg] });
    switch (method) {
      case 'groups.getById':
        if (p.group_id && !/^\d+$/.test(p.group_id))
          return fail(100, 'One of the parameters specified was missing or invalid: group_ids is undefined');
        if (p.group_id && !groupOk())
          return ok({ groups: [{ id: Number(p.group_id), name: 'Other', screen_name: `club${p.group_id}` }], profiles: [] });
        return ok({
          groups: [{ id: c.id, name: c.name, screen_name: c.screen_name, photo_200: c.photo_200, type: 'group' }],
          profiles: [],
        });
      case 'groups.getCallbackConfirmationCode':
        return groupOk() ? ok({ code: c.confirmation }) : fail(15, 'Access denied');
      case 'groups.getCallbackServers':
        return groupOk()
          ? ok({ count: c.servers.length, items: c.servers.map(({ id, url, title }) => ({ id, url, title, creator_id: 1, status: 'ok' })) })
          : fail(15, 'Access denied');
      case 'groups.addCallbackServer': {
        if (!groupOk()) return fail(15, 'Access denied');
        if (!/^https?:\/\//.test(p.url ?? '') || !p.title) return fail(100, 'One of the parameters specified was missing or invalid');
        if ((p.secret_key ?? '').length > 50 || /[^A-Za-z0-9]/.test(p.secret_key ?? '')) return fail(100, 'secret_key is invalid');
        const id = this.nextId++;
        c.servers.push({ id, url: p.url!, title: p.title, secret_key: p.secret_key ?? '', settings: {} });
        return ok({ server_id: id });
      }
      case 'groups.deleteCallbackServer':
        c.servers = c.servers.filter((s) => String(s.id) !== p.server_id);
        return ok(1);
      case 'groups.setCallbackSettings': {
        const server = c.servers.find((s) => String(s.id) === p.server_id);
        if (!groupOk() || !server) return fail(100, 'server_id is invalid');
        server.settings = p;
        return ok(1);
      }
      case 'groups.setLongPollSettings':
        if (!groupOk()) return fail(15, 'Access denied');
        c.longPoll.enabled = p.enabled === '1';
        c.longPoll.settings = p;
        return ok(1);
      case 'groups.getLongPollServer':
        if (!groupOk()) return fail(15, 'Access denied');
        if (!c.longPoll.enabled) return fail(100, 'Long Poll is disabled for this community');
        return ok({ key: c.longPoll.key, server: `${this.url}/lp/${c.id}`, ts: String(this.nextTs(c)) });
      case 'users.get':
        return ok(
          (p.user_ids ?? '').split(',').flatMap((id) => {
            const user = this.users.get(Number(id));
            return user
              ? [
                  {
                    id: Number(id),
                    first_name: user.first_name,
                    last_name: user.last_name,
                    screen_name: user.screen_name,
                    photo_200: user.photo_200,
                  },
                ]
              : [];
          }),
        );
      case 'messages.isMessagesFromGroupAllowed':
        return ok({ is_allowed: this.users.get(Number(p.user_id))?.allowsMessages ? 1 : 0 });
      case 'messages.send': {
        if (!p.peer_id || !p.random_id)
          return fail(100, 'One of the parameters specified was missing or invalid: random_id is a required parameter');
        if (!p.message && !p.attachment)
          return fail(100, 'One of the parameters specified was missing or invalid: message is empty or invalid');
        if ((p.message ?? '').length > 4096) return fail(914, 'Message is too long');
        const user = this.users.get(Number(p.peer_id));
        if (!user) return fail(100, 'peer_id is invalid');
        if (!user.allowsMessages) return fail(901, "Can't send messages for users without permission");
        const earlier = this.sent.find((m) => m.peer_id === p.peer_id && m.random_id === p.random_id);
        if (earlier) return ok(earlier.id);
        const id = this.nextId++;
        this.sent.push({
          peer_id: p.peer_id,
          random_id: p.random_id,
          message: p.message,
          attachment: p.attachment,
          reply_to: p.reply_to,
          id,
        });
        return ok(id);
      }
      case 'photos.getMessagesUploadServer':
        return ok({ upload_url: `${this.url}/upload/photo?peer=${p.peer_id}`, album_id: -3, group_id: c.id });
      case 'docs.getMessagesUploadServer':
        return p.type === 'doc' ? ok({ upload_url: `${this.url}/upload/doc?peer=${p.peer_id}` }) : fail(100, 'type is invalid');
      case 'photos.saveMessagesPhoto': {
        const upload = this.uploads.find((u) => u.kind === 'photo' && uploadToken(u) === p.photo);
        if (!upload || p.hash !== `h${p.photo}`) return fail(100, 'photo is undefined');
        return ok([{ id: this.nextId++, owner_id: -c.id, album_id: -3, access_key: 'ak1', sizes: [] }]);
      }
      case 'docs.save': {
        const upload = this.uploads.find((u) => u.kind === 'doc' && uploadToken(u) === p.file);
        if (!upload) return fail(100, 'file is undefined');
        return ok({
          type: 'doc',
          doc: { id: this.nextId++, owner_id: -c.id, title: p.title ?? upload.name, url: `${this.url}/media/doc` },
        });
      }
      case 'wall.createComment':
        return p.message ? ok({ comment_id: this.nextId++, parents_stack: [] }) : fail(100, 'message is empty');
      case 'photos.createComment':
      case 'video.createComment':
      case 'market.createComment':
        return p.message && p.from_group === '1' ? ok(this.nextId++) : fail(100, 'message is empty');
      case 'wall.getById':
        return ok({ items: this.objects.has(`wall${p.posts}`) ? [this.objects.get(`wall${p.posts}`)] : [] });
      case 'photos.getById':
        return this.objects.has(`photo${p.photos}`) ? ok([this.objects.get(`photo${p.photos}`)]) : fail(200, 'Access denied');
      case 'video.get':
        return ok({ count: 1, items: this.objects.has(`video${p.videos}`) ? [this.objects.get(`video${p.videos}`)] : [] });
      case 'market.getById':
        return ok({ count: 1, items: this.objects.has(`market${p.item_ids}`) ? [this.objects.get(`market${p.item_ids}`)] : [] });
      default:
        return fail(3, 'Unknown method passed');
    }
  }

  private longPoll(groupId: number, q: URLSearchParams): Record<string, unknown> {
    const community = [...this.tokens.values()].find((c) => c.id === groupId);
    if (!community || q.get('act') !== 'a_check') return { failed: 3 };
    const plannedAt = this.plannedPolls.findIndex((p) => p.group === groupId);
    if (plannedAt >= 0) return this.plannedPolls.splice(plannedAt, 1)[0]!.body;
    const lp = community.longPoll;
    if (q.get('key') !== lp.key) return { failed: 2 };
    const ts = Number(q.get('ts'));
    const next = this.nextTs(community);
    if (!Number.isSafeInteger(ts) || ts > next) return { failed: 1, ts: String(next) };
    return { ts: String(next), updates: lp.events.slice(ts - lp.base) };
  }

  /** Expires the long poll key (the next `a_check` with the old key answers `failed: 2`). */
  expireKey(community: Community): void {
    community.longPoll.key = crypto.randomBytes(8).toString('hex');
  }

  private async upload(kind: string, req: http.IncomingMessage, raw: Buffer): Promise<Record<string, unknown>> {
    const form = await new Request('http://upload/', {
      method: 'POST',
      headers: { 'content-type': String(req.headers['content-type'] ?? '') },
      body: raw,
    })
      .formData()
      .catch(() => undefined);
    const file = form?.get(kind === 'photo' ? 'photo' : 'file');
    if (!(file instanceof Blob)) return { error: 'ERR_UPLOAD_FILE_NOT_UPLOADED: file not uploaded' };
    const upload = { kind, name: (file as File).name, bytes: Buffer.from(await file.arrayBuffer()) };
    this.uploads.push(upload);
    const token = uploadToken(upload);
    return kind === 'photo' ? { server: 839214, photo: token, hash: `h${token}` } : { file: token };
  }
}

const uploadToken = (u: { kind: string; bytes: Buffer }) => `${u.kind}-${crypto.createHash('md5').update(u.bytes).digest('hex')}`;
