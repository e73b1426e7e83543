import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph } from './helpers/fake-meta-graph.js';
import { FakeMetaPages, messagingWebhook } from './helpers/fake-meta-pages.js';
import { postForm, sample } from './helpers/multipart.js';

const PUBLIC = 'https://parley.example.com';
const DAY = 24 * 60 * 60 * 1000;

let graph: FakeMetaGraph;
let pages: FakeMetaPages;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  // Instagram API with Instagram Login has its own host: the same fake serves it here.
  h = await createHarness({
    env: {
      PARLEY_INSTAGRAM_GRAPH_URL: graph.url,
      PARLEY_META_GRAPH_URL: 'http://127.0.0.1:9',
      PARLEY_PUBLIC_URL: PUBLIC,
      PARLEY_SEND_TIMEOUT_MS: '1000',
    },
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
type Connected = { token: string; appSecret: string; igId: string; integration: Record<string, any> };

async function connect(owner: SignedUp): Promise<Connected> {
  const n = ++seq;
  const account = {
    id: `1784140${n}5551234`,
    token: `IGQVJ-${n}`,
    name: `flower.shop.${n}`,
    picture: `https://cdn.example/ig${n}.jpg`,
    kind: 'instagram' as const,
  };
  pages.addPage(account);
  const appSecret = `ig-app-secret-${n}`;
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'photonetV3', credentials: { accessToken: account.token, appSecret } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { token: account.token, appSecret, igId: account.id, integration: res.json() };
}

const signed = (c: Connected, body: object, signature?: string) => {
  const raw = JSON.stringify(body);
  return h.request({
    method: 'POST',
    url: `/channels/meta/${c.integration.id}`,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature ?? FakeMetaGraph.sign(c.appSecret, raw) },
    payload: raw,
  });
};
let mid = 0;
function fromCustomer(c: Connected, igsid: string, message: Record<string, unknown>) {
  pages.customerWrote(c.igId, igsid, h.clock.now());
  return messagingWebhook('instagram', c.igId, [
    { sender: { id: igsid }, recipient: { id: c.igId }, timestamp: h.clock.now(), message: { mid: `aWdfZAG${++mid}`, ...message } },
  ]);
}
const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();

describe('connecting an Instagram professional account (photonetV3)', () => {
  it('reads /me on the Instagram host, subscribes the account and keeps user_id as identifier', async () => {
    const owner = await h.signUp();
    const c = await connect(owner);
    expect(c.integration).toMatchObject({
      status: 'active',
      login: `flower.shop.${seq}`,
      externalId: c.igId,
      identifier: c.igId,
      url: `https://www.instagram.com/flower.shop.${seq}`,
    });
    expect(c.integration.webhook.url).toBe(`${PUBLIC}/channels/meta/${c.integration.id}`);
    const [me] = graph.callsOf('GET', /^me$/);
    expect(me!.query.get('fields')).toBe('user_id,username,profile_picture_url');
    expect(me!.token).toBe(c.token);
    expect(graph.callsOf('POST', new RegExp(`^${c.igId}/subscribed_apps$`))[0]!.body.subscribed_fields).toContain('messages');
  });

  it('keeps a refused token as "auth failure"; missing credentials: 400', async () => {
    const owner = await h.signUp();
    const bad = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'photonetV3', credentials: { accessToken: 'nope', appSecret: 's' } },
    });
    expect(bad.json().status).toBe('auth failure');
    const missing = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'photonetV3', credentials: { accessToken: 'x' } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toContain('appSecret');
  });
});

describe('Instagram direct messages', () => {
  let owner: SignedUp;
  let c: Connected;
  let leadId: number;
  const igsid = '9001';
  const send = (payload: object) => h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
    pages.addUser({ id: igsid, firstName: 'Frida', lastName: 'Kahlo', username: 'frida', pic: 'https://cdn.example/frida.jpg' });
  });

  it('stores texts, story replies and mentions as links, with the profile read from Instagram', async () => {
    const text = await signed(
      c,
      fromCustomer(c, igsid, { text: 'Love this bouquet', reply_to: { story: { url: 'https://lookaside.example/story/1', id: '1799' } } }),
    );
    expect(text.json()).toMatchObject({ stored: 1 });
    await signed(
      c,
      fromCustomer(c, igsid, { attachments: [{ type: 'story_mention', payload: { url: 'https://lookaside.example/story/2' } }] }),
    );
    const rows = await messagesOf(c.integration.id);
    leadId = rows[0]!.lead_id;
    expect(JSON.parse(rows[0]!.attachments)).toEqual([{ type: 'link', url: 'https://lookaside.example/story/1', text: 'Story reply' }]);
    expect(rows[0]!.text).toBe('Love this bouquet');
    expect(JSON.parse(rows[1]!.attachments)).toEqual([{ type: 'link', url: 'https://lookaside.example/story/2', text: 'Story mention' }]);
    expect(graph.callsOf('GET', new RegExp(`^${igsid}$`))[0]!.query.get('fields')).toBe('name,username,profile_pic');
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: igsid, name: 'Frida Kahlo', login: 'frida', avatar: 'https://cdn.example/frida.jpg' });
  });

  it('refuses a page object for an Instagram integration and a bad signature first, storing nothing', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const wrongObject = messagingWebhook('page', c.igId, [
      { sender: { id: igsid }, recipient: { id: c.igId }, timestamp: 1, message: { mid: 'x1', text: 'x' } },
    ]);
    expect((await signed(c, wrongObject)).statusCode).toBe(400);
    expect((await signed(c, fromCustomer(c, igsid, { text: 'y' }), 'sha256=beef')).statusCode).toBe(401);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });

  it('answers with RESPONSE, sends a file by its public URL, and takes read receipts by mid', async () => {
    const res = await send({ message: { text: 'Thank you!' } });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${c.igId}/messages$`));
    expect(call!.body).toEqual({
      recipient: { id: igsid },
      messaging_type: 'RESPONSE',
      message: { text: 'Thank you!', metadata: 'parley' },
    });
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'rose.png' }],
    ]);
    expect(Object.keys(up.json().media).sort()).toEqual(['mime', 'name', 'size', 'type', 'url']);
    expect((await send({ message: { attachment: up.json() } })).statusCode).toBe(200);
    expect(pages.sent.at(-1)!.body.message).toEqual({
      attachment: { type: 'image', payload: { url: expect.stringMatching(/^https:\/\/parley\.example\.com\//) } },
      metadata: 'parley',
    });
    const sentMid = pages.sent.at(-1)!.mid;
    const seen = await signed(
      c,
      messagingWebhook('instagram', c.igId, [
        { sender: { id: igsid }, recipient: { id: c.igId }, timestamp: h.clock.now(), read: { mid: sentMid } },
      ]),
    );
    expect(seen.json().statuses).toBe(1);
    expect(
      (await db().selectFrom('messages').select('delivery_status').where('external_id', '=', sentMid).executeTakeFirstOrThrow())
        .delivery_status,
    ).toBe('read');
  });

  it('refuses a free-form answer after 24 hours without calling Instagram', async () => {
    await db()
      .updateTable('sources')
      .set({ expires_at: h.clock.now() - 1 })
      .where('integration_id', '=', c.integration.id)
      .execute();
    graph.calls.length = 0;
    const res = await send({ message: { text: 'late' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('outside the 24-hour window');
    expect(graph.calls).toHaveLength(0);
    await signed(c, fromCustomer(c, igsid, { text: 'back again' }));
    expect(
      (await db().selectFrom('sources').select('expires_at').where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow())
        .expires_at,
    ).toBe(h.clock.now() + DAY);
    expect((await send({ message: { text: 'welcome back' } })).statusCode).toBe(200);
  });
});
