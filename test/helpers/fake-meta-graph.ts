import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Meta's Graph API for WhatsApp Cloud API on 127.0.0.1, following the documented shapes
 * (https://developers.facebook.com/docs/whatsapp/cloud-api/reference): `/<version>/<path>` with
 * `Authorization: Bearer <token>`; refusals as the Graph error envelope `{error: {message, type,
 * code, error_subcode, error_data, fbtrace_id}}`. It keeps phone numbers, their templates, uploaded
 * media (retrievable by id, the file downloadable with the token only) and the customer-service
 * windows: a free-form message to a customer whose window is closed is refused with 131047, as
 * Meta does. `sign()` makes a webhook's `X-Hub-Signature-256`.
 */
export interface GraphCall {
  method: string;
  path: string;
  token: string | undefined;
  query: URLSearchParams;
  body: Record<string, any>;
}

export interface FakeNumber {
  token: string;
  phoneNumberId: string;
  wabaId: string;
  display: string;
  name: string;
}

export interface FakeTemplate {
  name: string;
  language: string;
  category: string;
  status: string;
  components: unknown[];
}

type Envelope = { status: number; error: Record<string, unknown>; retryAfter?: number };

/** A request another Graph product of the fake (Messenger, Instagram) may answer; true when it did. */
export interface GraphRoute {
  method: string;
  path: string;
  token: string | undefined;
  query: URLSearchParams;
  body: Record<string, any>;
  json: (status: number, body: unknown) => void;
  fail: (status: number, code: number, message: string, extra?: Record<string, unknown>) => void;
}

export class FakeMetaGraph {
  readonly version = 'v23.0';
  readonly calls: GraphCall[] = [];
  readonly numbers = new Map<string, FakeNumber>();
  readonly templates = new Map<string, FakeTemplate[]>();
  /** Uploaded (outbound) and customer-sent (inbound) media by id. */
  readonly media = new Map<string, { bytes: Buffer; mime: string; filename: string; owner: string }>();
  private readonly windows = new Set<string>();
  private readonly planned: Array<{ path: RegExp; answer: Envelope | 'hang' }> = [];
  /** Other products served by the same fake, tried before the WhatsApp routes. */
  readonly products: Array<(route: GraphRoute) => boolean> = [];
  private seq = 0;
  /** The id the next accepted message gets (tests that report on it before Parley stores it). */
  nextWamid: string | undefined;

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(): Promise<FakeMetaGraph> {
    let fake!: FakeMetaGraph;
    const server = http.createServer((req, res) => void fake.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeMetaGraph(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  static sign(appSecret: string, body: string): string {
    return `sha256=${crypto.createHmac('sha256', appSecret).update(body).digest('hex')}`;
  }

  addNumber(n: FakeNumber): void {
    this.numbers.set(n.phoneNumberId, n);
  }

  /** A customer wrote to the number: free-form messages may follow (Meta: for 24 hours). */
  openWindow(phoneNumberId: string, waId: string): void {
    this.windows.add(`${phoneNumberId}:${waId}`);
  }

  closeWindow(phoneNumberId: string, waId: string): void {
    this.windows.delete(`${phoneNumberId}:${waId}`);
  }

  /** Media a customer sent: its id for the webhook. */
  addInboundMedia(token: string, bytes: Buffer, mime: string): string {
    const id = String(900_000_000_000_000 + ++this.seq);
    this.media.set(id, { bytes, mime, filename: '', owner: token });
    return id;
  }

  /** The next call whose path matches answers this Graph error (or never answers: 'hang'). */
  failNext(path: RegExp, answer: Envelope | 'hang'): void {
    this.planned.push({ path, answer });
  }

  callsOf(method: string, path: RegExp): GraphCall[] {
    return this.calls.filter((c) => c.method === method && path.test(c.path));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', this.url);
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fail = (status: number, code: number, message: string, extra: Record<string, unknown> = {}) =>
      json(status, {
        error: { message, type: code === 190 ? 'OAuthException' : 'OAuthException', code, fbtrace_id: `A${++this.seq}xYz`, ...extra },
      });

    // The CDN-like download of a media file: the same bearer token is required.
    const cdn = /^\/cdn\/(\d+)$/.exec(url.pathname);
    if (cdn && this.media.has(cdn[1]!)) {
      // Messenger/Instagram attachment URLs: public CDN links, no token.
      const file = this.media.get(cdn[1]!)!;
      res.writeHead(200, { 'content-type': file.mime, 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }
    const download = /^\/media-download\/(\d+)$/.exec(url.pathname);
    if (download) {
      const file = this.media.get(download[1]!);
      if (!file || token !== file.owner) return fail(401, 190, 'Invalid OAuth access token');
      res.writeHead(200, { 'content-type': file.mime, 'content-length': file.bytes.length });
      return void res.end(file.bytes);
    }

    const match = new RegExp(`^/${this.version}/(.+)$`).exec(url.pathname);
    if (!match) return fail(400, 2500, 'Unknown path components');
    const path = match[1]!;
    let body: Record<string, any> = {};
    const type = req.headers['content-type'] ?? '';
    if (type.startsWith('application/json')) body = raw.length ? JSON.parse(raw.toString('utf8')) : {};
    else if (type.startsWith('multipart/form-data')) {
      const form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': type }, body: raw }).formData();
      for (const [key, value] of form.entries()) {
        body[key] =
          typeof value === 'string' ? value : { filename: value.name, mime: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
      }
    }
    this.calls.push({ method: req.method ?? 'GET', path, token, query: url.searchParams, body });

    const plannedAt = this.planned.findIndex((p) => p.path.test(path));
    if (plannedAt >= 0) {
      const [{ answer }] = this.planned.splice(plannedAt, 1);
      if (answer === 'hang') return;
      if (answer.retryAfter) res.setHeader('retry-after', String(answer.retryAfter));
      return json(answer.status, { error: { fbtrace_id: `A${++this.seq}xYz`, ...answer.error } });
    }

    const route: GraphRoute = { method: req.method ?? 'GET', path, token, query: url.searchParams, body, json, fail };
    if (this.products.some((product) => product(route))) return;

    const owned = [...this.numbers.values()].filter((n) => n.token === token);
    if (!token || !owned.length) return fail(401, 190, 'Invalid OAuth access token - Cannot parse access token');
    const [id, edge] = path.split('/');
    const number = owned.find((n) => n.phoneNumberId === id);
    const unknownObject = () =>
      fail(
        400,
        100,
        `Unsupported ${req.method === 'GET' ? 'get' : 'post'} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
        { error_subcode: 33 },
      );

    if (req.method === 'GET' && !edge) {
      if (number) return json(200, { display_phone_number: number.display, verified_name: number.name, id: number.phoneNumberId });
      const file = this.media.get(id!);
      if (file && file.owner === token) {
        return json(200, {
          messaging_product: 'whatsapp',
          url: `${this.url}/media-download/${id}`,
          mime_type: file.mime,
          sha256: 'x',
          file_size: file.bytes.length,
          id,
        });
      }
      return unknownObject();
    }
    if (req.method === 'GET' && edge === 'message_templates') {
      const waba = owned.find((n) => n.wabaId === id);
      if (!waba) return unknownObject();
      const all = (this.templates.get(id!) ?? []).filter(
        (t) => !url.searchParams.get('status') || t.status === url.searchParams.get('status'),
      );
      const limit = Number(url.searchParams.get('limit') ?? 25);
      const start = Number(url.searchParams.get('after') ?? 0);
      const page = all.slice(start, start + limit).map((t, i) => ({ ...t, id: String(5000 + start + i) }));
      const more = start + limit < all.length;
      return json(200, {
        data: page,
        paging: { cursors: { before: String(start), after: String(start + limit) }, ...(more ? { next: `${this.url}/next` } : {}) },
      });
    }
    if (!number) return unknownObject();
    if (req.method === 'POST' && edge === 'media') {
      const file = body.file as { filename: string; mime: string; bytes: Buffer } | undefined;
      if (body.messaging_product !== 'whatsapp' || !file)
        return fail(400, 100, 'Invalid parameter', { error_data: { details: 'messaging_product and file are required' } });
      const mediaId = String(800_000_000_000_000 + ++this.seq);
      this.media.set(mediaId, { ...file, owner: token });
      return json(200, { id: mediaId });
    }
    if (req.method === 'POST' && edge === 'messages') return this.message(number, body, json, fail);
    return fail(400, 100, 'Unsupported request');
  }

  private message(
    number: FakeNumber,
    body: Record<string, any>,
    json: (status: number, body: unknown) => void,
    fail: (status: number, code: number, message: string, extra?: Record<string, unknown>) => void,
  ): void {
    if (body.messaging_product !== 'whatsapp' || typeof body.to !== 'string' || typeof body.type !== 'string') {
      fail(400, 100, '(#100) Invalid parameter');
      return;
    }
    if (body.type === 'template') {
      const t = body.template ?? {};
      const known = (this.templates.get(number.wabaId) ?? []).find(
        (x) => x.name === t.name && x.language === t.language?.code && x.status === 'APPROVED',
      );
      if (!known) {
        fail(404, 132001, '(#132001) Template name does not exist in the translation', {
          error_data: {
            messaging_product: 'whatsapp',
            details: `template name (${String(t.name)}) does not exist in ${String(t.language?.code)}`,
          },
        });
        return;
      }
    } else {
      if (!this.windows.has(`${number.phoneNumberId}:${body.to}`)) {
        fail(400, 131047, 'Re-engagement message', {
          error_data: {
            messaging_product: 'whatsapp',
            details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
          },
        });
        return;
      }
      if (body.type === 'text' && !(typeof body.text?.body === 'string' && body.text.body.length <= 4096)) {
        fail(400, 100, "(#100) Param text['body'] must be at most 4096 characters long.");
        return;
      }
      if (['image', 'video', 'document'].includes(body.type) && !this.media.has(String(body[body.type]?.id))) {
        fail(400, 131053, 'Media upload error', { error_data: { details: 'Unknown media id' } });
        return;
      }
    }
    json(200, {
      messaging_product: 'whatsapp',
      contacts: [{ input: body.to, wa_id: body.to }],
      messages: [{ id: this.takeWamid(), message_status: 'accepted' }],
    });
  }

  private takeWamid(): string {
    const id = this.nextWamid ?? `wamid.HBgL${Date.now().toString(36)}${++this.seq}`;
    this.nextWamid = undefined;
    return id;
  }
}

/** A `whatsapp_business_account` webhook of one change (field `messages`). */
export function waWebhook(
  phoneNumberId: string,
  value: { contacts?: unknown[]; messages?: unknown[]; statuses?: unknown[] },
  wabaId = '102290129340398',
): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: wabaId,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId },
              ...value,
            },
          },
        ],
      },
    ],
  };
}
