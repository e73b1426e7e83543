import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph } from './helpers/fake-meta-graph.js';
import { FakeMetaPages, messagingWebhook } from './helpers/fake-meta-pages.js';
import { postForm, sample } from './helpers/multipart.js';

const PUBLIC = 'https://parley.example.com';
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let graph: FakeMetaGraph;
let pages: FakeMetaPages;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  h = await createHarness({
    env: { PARLEY_META_GRAPH_URL: graph.url, PARLEY_PUBLIC_URL: PUBLIC, PARLEY_SEND_TIMEOUT_MS: '1000', PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' },
  });
  pages = new FakeMetaPages(graph, () => h.clock.now());
});
afterAll(async () => {
  await h?.close();
  await graph?.close();
});
beforeEach(() => {
  graph.calls.length = 0;
});

const db = () => h.database.db.kysely;
type Connected = { token: string; appSecret: string; pageId: string; integration: Record<string, any> };

async function connect(owner: SignedUp, settings: Record<string, unknown> = {}): Promise<Connected> {
  const n = ++seq;
  const page = {
    id: `10${n}4455667788`,
    token: `EAAPage-${n}`,
    name: `Bakery ${n}`,
    picture: `https://cdn.example/p${n}.jpg`,
    kind: 'page' as const,
  };
  pages.addPage(page);
  const appSecret = `page-app-secret-${n}`;
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'social1_messenger', credentials: { pageAccessToken: page.token, pageId: page.id, appSecret }, settings },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { token: page.token, appSecret, pageId: page.id, integration: res.json() };
}

const signed = (c: Connected, body: object | string, signature?: string) => {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return h.request({
    method: 'POST',
    url: `/channels/meta/${c.integration.id}`,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature ?? FakeMetaGraph.sign(c.appSecret, raw) },
    payload: raw,
  });
};

let mid = 0;
/** A customer's message event; the fake opens the Send API's window as Meta would. */
function fromCustomer(c: Connected, psid: string, message: Record<string, unknown>) {
  pages.customerWrote(c.pageId, psid, h.clock.now());
  return messagingWebhook('page', c.pageId, [
    { sender: { id: psid }, recipient: { id: c.pageId }, timestamp: h.clock.now(), message: { mid: `m_in${++mid}`, ...message } },
  ]);
}
const externalIdOf = async (messageId: string) =>
  (await db().selectFrom('messages').select('external_id').where('id', '=', Number(messageId)).executeTakeFirstOrThrow()).external_id!;
/** The customer wrote `ago` ms before now: Parley's deadline and the fake's window follow (no clock jump: tokens stay valid). */
async function wroteAgo(c: Connected, psid: string, ago: number) {
  pages.customerWrote(c.pageId, psid, h.clock.now() - ago);
  await db()
    .updateTable('sources')
    .set({ expires_at: h.clock.now() - ago + DAY })
    .where('integration_id', '=', c.integration.id)
    .where('external_id', '=', psid)
    .execute();
}
const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();

describe('connecting a Facebook Page (social1_messenger)', () => {
  it('reads the Page, subscribes the app to its webhooks and keeps the Page id as identifier', async () => {
    const owner = await h.signUp();
    const c = await connect(owner);
    expect(c.integration).toMatchObject({
      status: 'active',
      login: `Bakery ${seq}`,
      externalId: c.pageId,
      identifier: c.pageId,
      avatar: `https://cdn.example/p${seq}.jpg`,
    });
    expect(c.integration.webhook).toEqual({ url: `${PUBLIC}/channels/meta/${c.integration.id}`, verifyToken: expect.any(String) });
    const [read] = graph.callsOf('GET', new RegExp(`^${c.pageId}$`));
    expect(read!.query.get('fields')).toBe('name,picture');
    expect(read!.token).toBe(c.token);
    const [sub] = graph.callsOf('POST', new RegExp(`^${c.pageId}/subscribed_apps$`));
    expect(sub!.body.subscribed_fields).toContain('messages');
    expect(sub!.body.subscribed_fields).toContain('message_echoes');
  });

  it('keeps a refused token as "auth failure"; an unknown or non-numeric Page id or missing credentials: 400', async () => {
    const owner = await h.signUp();
    const bad = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social1_messenger', credentials: { pageAccessToken: 'nope', pageId: '123', appSecret: 's' } },
    });
    expect(bad.json().status).toBe('auth failure');
    const c = await connect(owner);
    const other = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social1_messenger', credentials: { pageAccessToken: c.token, pageId: '999', appSecret: 's' } },
    });
    expect(other.statusCode).toBe(400);
    expect(other.json().error).toContain('does not exist');
    const path = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social1_messenger', credentials: { pageAccessToken: c.token, pageId: 'me/feed', appSecret: 's' } },
    });
    expect(path.statusCode).toBe(400);
    const missing = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social1_messenger', credentials: { pageAccessToken: c.token } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toContain('pageId');
  });
});

describe('Messenger webhooks', () => {
  let owner: SignedUp;
  let c: Connected;
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
    pages.addUser({ id: '7001', firstName: 'Grace', lastName: 'Hopper', pic: 'https://cdn.example/grace.jpg' });
  });

  it('stores a text once, naming the customer from the Graph profile read once, and opening the 24-hour window', async () => {
    const body = fromCustomer(c, '7001', { text: 'Do you have rye bread?' });
    const first = await signed(c, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ stored: 1, duplicates: 0 });
    expect((await signed(c, body)).json()).toMatchObject({ stored: 0, duplicates: 1 });
    await signed(c, fromCustomer(c, '7001', { text: 'Quick reply', quick_reply: { payload: 'RYE' } }));
    expect(graph.callsOf('GET', /^7001$/)).toHaveLength(1);
    expect(graph.callsOf('GET', /^7001$/)[0]!.query.get('fields')).toBe('first_name,last_name,profile_pic');
    const stored = await messagesOf(c.integration.id);
    expect(stored.map((m) => m.text)).toEqual(['Do you have rye bread?', 'Quick reply']);
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: '7001', name: 'Grace Hopper', avatar: 'https://cdn.example/grace.jpg' });
    const source = await db().selectFrom('sources').selectAll().where('id', '=', stored[0]!.source_id).executeTakeFirstOrThrow();
    expect(source).toMatchObject({ external_id: '7001', type: 'message', expires_at: h.clock.now() + DAY });
  });

  it('copies attachments into storage, keeps links and locations, quotes replies, stores postbacks by title', async () => {
    const photo = sample('png', 300);
    const url = pages.cdnFile(Buffer.from(photo), 'image/png');
    const first = fromCustomer(c, '7002', {
      text: 'look',
      attachments: [
        { type: 'image', payload: { url } },
        { type: 'fallback', title: 'Our menu', payload: { url: 'https://example.com/menu' } },
      ],
    });
    expect((await signed(c, first)).json()).toMatchObject({ stored: 1 });
    const quoted = (first.entry as any)[0].messaging[0].message.mid;
    await signed(c, fromCustomer(c, '7002', { text: 'this one', reply_to: { mid: quoted } }));
    await signed(
      c,
      messagingWebhook('page', c.pageId, [
        {
          sender: { id: '7002' },
          recipient: { id: c.pageId },
          timestamp: h.clock.now(),
          postback: { mid: 'm_pb1', title: 'Order now', payload: 'ORDER' },
        },
      ]),
    );
    const stored = (await messagesOf(c.integration.id)).filter(
      (m) => m.external_id === quoted || m.external_id === 'm_pb1' || m.text === 'this one',
    );
    const [withFiles, reply, postback] = stored;
    const attachments = JSON.parse(withFiles!.attachments);
    expect(attachments[0]).toMatchObject({ type: 'photo', filesize: photo.length });
    const copy = await h.request({ method: 'GET', url: new URL(attachments[0].url).pathname });
    expect(Buffer.from(copy.rawPayload)).toEqual(Buffer.from(photo));
    expect(attachments[1]).toEqual({ type: 'link', url: 'https://example.com/menu', text: 'Our menu' });
    expect(JSON.parse(reply!.reply_to!)).toMatchObject({ message: { text: 'look' } });
    expect(postback).toMatchObject({ text: 'Order now', incoming: 1 });
  });

  it('checks the signature over the raw bytes first (401 before 400), refuses malformed events whole, never stores either', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    expect((await signed(c, '{not json', 'sha256=00')).statusCode).toBe(401);
    const good = fromCustomer(c, '7003', { text: 'hi' });
    const raw = JSON.stringify(good);
    expect((await signed(c, raw.replace('hi', 'ho'), FakeMetaGraph.sign(c.appSecret, raw))).statusCode).toBe(401);
    expect((await signed(c, '{not json')).statusCode).toBe(400);
    const mixed = messagingWebhook('page', c.pageId, [
      { sender: { id: '7003' }, recipient: { id: c.pageId }, timestamp: h.clock.now(), message: { mid: 'm_ok', text: 'fine' } },
      { sender: { id: '7003' }, recipient: { id: c.pageId }, timestamp: 'yesterday', message: { mid: 'm_bad', text: 'broken' } },
    ]);
    expect((await signed(c, mixed)).statusCode).toBe(400);
    expect(
      (
        await signed(
          c,
          messagingWebhook('page', c.pageId, [
            { sender: { id: '7003' }, recipient: { id: c.pageId }, timestamp: 1, message: { text: 'no mid' } },
          ]),
        )
      ).statusCode,
    ).toBe(400);
    const nul = await signed(c, fromCustomer(c, '7003', { text: 'a\u0000b' }));
    expect(nul.statusCode).toBe(400);
    const otherPage = await signed(
      c,
      messagingWebhook('page', '555', [
        { sender: { id: '1' }, recipient: { id: '555' }, timestamp: 1, message: { mid: 'm_x', text: 'x' } },
      ]),
    );
    expect(otherPage.statusCode).toBe(200);
    expect(otherPage.json().ignored[0]).toContain('555');
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });
});

describe('Messenger sending, echoes and receipts', () => {
  let owner: SignedUp;
  let c: Connected;
  let leadId: number;
  const psid = '7101';
  const send = (payload: object) => h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
    await signed(c, fromCustomer(c, psid, { text: 'Hello' }));
    leadId = (await messagesOf(c.integration.id))[0]!.lead_id;
  });

  it('answers with messaging_type RESPONSE, as a reply, and a file uploaded to message_attachments', async () => {
    const incoming = (await messagesOf(c.integration.id))[0]!;
    const res = await send({ message: { text: 'Hi there' }, replyId: incoming.id });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${c.pageId}/messages$`));
    expect(call!.body).toEqual({
      recipient: { id: psid },
      messaging_type: 'RESPONSE',
      message: { text: 'Hi there', reply_to: { mid: incoming.external_id }, metadata: 'parley' },
    });
    expect(call!.token).toBe(c.token);
    expect(await externalIdOf(res.json()[0].messageId)).toBe(pages.sent.at(-1)!.mid);

    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'cake.png' }],
    ]);
    expect(Object.keys(up.json().media).sort()).toEqual(['mime', 'name', 'path']);
    const file = await send({ message: { attachment: up.json() } });
    expect(file.statusCode, file.body).toBe(200);
    const [upload] = graph.callsOf('POST', /message_attachments$/);
    expect(JSON.parse(upload!.body.message)).toEqual({ attachment: { type: 'image', payload: { is_reusable: true } } });
    expect(Buffer.from(upload!.body.filedata.bytes)).toEqual(Buffer.from(sample('png')));
    expect(pages.sent.at(-1)!.body.message).toEqual({
      attachment: { type: 'image', payload: { attachment_id: expect.any(String) } },
      metadata: 'parley',
    });
  });

  it("stores a Page inbox answer (is_echo) as outgoing once, and no second copy of Parley's own sends", async () => {
    const res = await send({ message: { text: 'from Parley' } });
    const ownMid = await externalIdOf(res.json()[0].messageId);
    const echo = (m: string, text: string, metadata?: string) =>
      messagingWebhook('page', c.pageId, [
        {
          sender: { id: c.pageId },
          recipient: { id: psid },
          timestamp: h.clock.now(),
          message: { mid: m, text, is_echo: true, app_id: 263902037430900, ...(metadata ? { metadata } : {}) },
        },
      ]);
    // Meta hands back the metadata of Parley's sends: recognised even before Parley committed the send.
    expect((await signed(c, echo('m_not_yet_committed', 'racing', 'parley'))).json()).toMatchObject({
      stored: 0,
      ignored: ['echo m_not_yet_committed: sent by Parley'],
    });
    // And by its id when the metadata is missing.
    expect((await signed(c, echo(ownMid, 'from Parley'))).json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect((await signed(c, echo('m_inbox1', 'answered in the Page inbox'))).json()).toMatchObject({ stored: 1 });
    expect((await signed(c, echo('m_inbox1', 'answered in the Page inbox'))).json()).toMatchObject({ duplicates: 1 });
    const rows = await messagesOf(c.integration.id);
    expect(rows.filter((m) => m.text === 'from Parley')).toHaveLength(1);
    expect(rows.some((m) => m.text === 'racing')).toBe(false);
    expect(rows.at(-1)).toMatchObject({ text: 'answered in the Page inbox', incoming: 0, lead_id: leadId, user_id: null });
  });

  it('moves delivery statuses with delivery and read watermarks, forward only', async () => {
    const sentAt = h.clock.now();
    const m = { messageId: await externalIdOf((await send({ message: { text: 'status me' } })).json()[0].messageId) };
    const receipt = (kind: 'delivery' | 'read', report: Record<string, unknown>) =>
      signed(
        c,
        messagingWebhook('page', c.pageId, [
          { sender: { id: psid }, recipient: { id: c.pageId }, timestamp: h.clock.now(), [kind]: report },
        ]),
      );
    expect((await receipt('read', { watermark: sentAt })).json().statuses).toBeGreaterThanOrEqual(1);
    expect((await receipt('delivery', { mids: [m.messageId], watermark: sentAt })).json().statuses).toBe(0);
    const row = await db().selectFrom('messages').selectAll().where('external_id', '=', m.messageId).executeTakeFirstOrThrow();
    expect(row.delivery_status).toBe('read');
    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'message.status')
      .execute();
    expect(events.map((e) => JSON.parse(e.payload))).toContainEqual(expect.objectContaining({ messageId: String(row.id), status: 'read' }));
  });

  it('refuses a free-form answer after 24 hours with a clear reason, without calling Meta', async () => {
    await wroteAgo(c, psid, DAY + HOUR);
    graph.calls.length = 0;
    const res = await send({ message: { text: 'still there?' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('outside the 24-hour window');
    expect(res.json().error).toContain('HUMAN_AGENT');
    expect(graph.callsOf('POST', /messages$/)).toHaveLength(0);
  });
});

describe('Messenger HUMAN_AGENT tag', () => {
  it('answers up to 7 days with MESSAGE_TAG + HUMAN_AGENT when settings.humanAgent is on, then refuses', async () => {
    const owner = await h.signUp();
    const c = await connect(owner, { humanAgent: true });
    await signed(c, fromCustomer(c, '7201', { text: 'Complaint' }));
    const leadId = (await messagesOf(c.integration.id))[0]!.lead_id;
    const send = () =>
      h.request({
        method: 'POST',
        url: `/v1.3/messaging/${leadId}/send`,
        token: owner.access,
        payload: { message: { text: 'Sorry for the wait' } },
      });
    expect((await send()).statusCode).toBe(200);
    expect(pages.sent.at(-1)!.body.messaging_type).toBe('RESPONSE');
    await wroteAgo(c, '7201', 3 * DAY);
    const late = await send();
    expect(late.statusCode, late.body).toBe(200);
    expect(pages.sent.at(-1)!.body).toMatchObject({ messaging_type: 'MESSAGE_TAG', tag: 'HUMAN_AGENT' });
    await wroteAgo(c, '7201', 7 * DAY + HOUR);
    const closed = await send();
    expect(closed.statusCode).toBe(422);
    expect(closed.json().error).toContain('7-day');
  });
});

describe('Messenger refusals from Meta', () => {
  it("maps Meta's refusals: outside the window -> 422 with Meta's text, a revoked token -> auth failure, rate limit -> 429", async () => {
    const owner = await h.signUp();
    const c = await connect(owner);
    await signed(c, fromCustomer(c, '7301', { text: 'Hi' }));
    const leadId = (await messagesOf(c.integration.id))[0]!.lead_id;
    const send = () =>
      h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload: { message: { text: 'x' } } });
    // Meta's own clock says the window closed (Parley's deadline still open): Meta's reason comes back.
    pages.customerWrote(c.pageId, '7301', h.clock.now() - 2 * DAY);
    const window = await send();
    expect(window.statusCode).toBe(422);
    expect(window.json().error).toContain('outside of allowed window');
    pages.customerWrote(c.pageId, '7301', h.clock.now());
    graph.failNext(/messages$/, {
      status: 400,
      error: { message: '(#613) Calls to this api have exceeded the rate limit.', type: 'OAuthException', code: 613 },
    });
    const limited = await send();
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    graph.failNext(/messages$/, {
      status: 401,
      error: { message: 'Error validating access token: The session has been invalidated', type: 'OAuthException', code: 190 },
    });
    expect((await send()).statusCode).toBe(422);
    const row = await db().selectFrom('integrations').select('status').where('id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('auth failure');
    expect((await messagesOf(c.integration.id)).filter((m) => !m.incoming)).toHaveLength(0);
  });
});
