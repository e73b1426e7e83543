import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeOk } from './helpers/fake-ok.js';
import { postForm, sample } from './helpers/multipart.js';
import { LongPoller } from '../src/channels/social/long-poller.js';
import { OkPollSource } from '../src/channels/ok/ok-poller.js';

const PUBLIC = 'https://parley.example.com';

let ok: FakeOk;
let hook: Harness;
let poll: Harness;
let seq = 0;

beforeAll(async () => {
  ok = await FakeOk.start();
  hook = await createHarness({ env: { PARLEY_OK_API_URL: ok.url, PARLEY_PUBLIC_URL: PUBLIC } });
  poll = await createHarness({ env: { PARLEY_OK_API_URL: ok.url } });
});
afterAll(async () => {
  await hook?.close();
  await poll?.close();
  await ok?.close();
});

async function connect(h: Harness, type = 'social3') {
  const owner = await h.signUp();
  const n = ++seq;
  const token = `tkn1ok-group-${n}`;
  const group = ok.addGroup(token, `5700000${n}`, `Bakery ${n}`);
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type, credentials: { token } },
  });
  expect(res.statusCode).toBe(200);
  return {
    owner,
    token,
    group,
    integration: res.json() as { id: number; type: string; status: string; login: string; externalId: string; url: string },
  };
}
type Bot = Awaited<ReturnType<typeof connect>>;

const messagesOf = (h: Harness, integrationId: number) =>
  h.database.db.kysely.selectFrom('messages').selectAll().where('integration_id', '=', integrationId).orderBy('id').execute();
const post = (bot: Bot, body: unknown, key?: string) => {
  const url =
    key === undefined ? `/channels/ok/${bot.integration.id}` : `/channels/ok/${bot.integration.id}?key=${encodeURIComponent(key)}`;
  return hook.request({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
};
/** What OK posts: to the exact address Parley subscribed. */
const deliver = (bot: Bot, body: unknown) => {
  const url = new URL(bot.group.webhooks[0]!);
  return hook.request({
    method: 'POST',
    url: url.pathname + url.search,
    headers: { 'content-type': 'application/json;charset=utf-8' },
    payload: JSON.stringify(body),
  });
};

describe('connecting an OK group', () => {
  it('checks the token with GET /graph/me/info and subscribes its webhook (JSON); `ok` is accepted and answered as social3', async () => {
    const bot = await connect(hook, 'ok');
    expect(bot.integration).toMatchObject({
      type: 'social3',
      status: 'active',
      login: bot.group.name,
      externalId: bot.group.id,
      url: `https://ok.ru/group/${bot.group.id}`,
    });
    expect(bot.group.webhooks).toHaveLength(1);
    expect(bot.group.webhooks[0]).toMatch(new RegExp(`^${PUBLIC}/channels/ok/${bot.integration.id}\\?key=[A-Za-z0-9_-]+$`));
    expect(ok.callsOf('subscribe').at(-1)!.contentType).toMatch(/^application\/json/);
    const list = await hook.request({ method: 'GET', url: '/v1.3/integrations', token: bot.owner.access });
    expect(list.json().map((i: { type: string }) => i.type)).toEqual(['social3']);
  });

  it('keeps a refused token as "auth failure"; unsubscribes on DELETE', async () => {
    const owner = await hook.signUp();
    const refused = await hook.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social3', credentials: { token: 'expired' } },
    });
    expect(refused.json().status).toBe('auth failure');
    const bot = await connect(hook);
    await hook.request({ method: 'DELETE', url: `/v1.3/integrations/${bot.integration.id}`, token: bot.owner.access });
    expect(bot.group.webhooks).toEqual([]);
  });
});

describe('OK webhook', () => {
  it('stores MESSAGE_CREATED once per mid, with text and downloaded attachments, answering 200 after commit', async () => {
    const bot = await connect(hook);
    const jpeg = Buffer.from(sample('jpeg'));
    const pdf = Buffer.from(sample('pdf'));
    const note = ok.messageCreated(bot.group, '572705124016', 'C3ecb9d02a600', {
      text: 'Do you bake rye bread?',
      attachments: [
        { type: 'IMAGE', payload: { url: ok.addMedia('bread.jpg', jpeg, 'image/jpeg') } },
        { type: 'FILE', payload: { url: ok.addMedia('order.pdf', pdf, 'application/pdf'), name: 'order.pdf' } },
        { type: 'SHARE', payload: { url: 'https://ok.ru/group/1/topic/2', title: 'A topic' } },
      ],
    });
    for (let i = 0; i < 2; i++) {
      const res = await deliver(bot, note);
      expect(res.statusCode).toBe(200);
    }
    const stored = await messagesOf(hook, bot.integration.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ text: 'Do you bake rye bread?', external_id: (note.message as { mid: string }).mid, incoming: 1 });
    const att = JSON.parse(stored[0]!.attachments) as Array<{ type: string; url: string; text: string }>;
    expect(att.map((a) => a.type)).toEqual(['photo', 'doc', 'link']);
    expect(att[1]!.text).toBe('order.pdf');
    expect(Buffer.from((await hook.request({ method: 'GET', url: att[0]!.url.slice(PUBLIC.length) })).rawPayload)).toEqual(jpeg);
    const source = await hook.database.db.kysely
      .selectFrom('sources')
      .selectAll()
      .where('id', '=', stored[0]!.source_id)
      .executeTakeFirstOrThrow();
    expect(source).toMatchObject({ type: 'message', external_id: 'C3ecb9d02a600', sender: '572705124016' });
    // The leads filter takes `ok` for social3 too.
    for (const types of ['ok', 'social3']) {
      const leads = await hook.request({ method: 'GET', url: `/v1.3/leads/all?types=${types}`, token: bot.owner.access });
      expect(
        leads.json().map((l: { id: number }) => l.id),
        types,
      ).toEqual([stored[0]!.lead_id]);
    }
  });

  it('refuses calls without the key (401), malformed notifications (400), unknown integrations (404); ignores other types', async () => {
    const bot = await connect(hook);
    const note = ok.messageCreated(bot.group, '1', 'C1', { text: 'forged' });
    expect((await post(bot, note)).statusCode).toBe(401);
    expect((await post(bot, note, 'wrong')).statusCode).toBe(401);
    const key = new URL(bot.group.webhooks[0]!).searchParams.get('key')!;
    expect((await post(bot, '{oops', key)).statusCode).toBe(400);
    expect((await post(bot, { webhookType: 'MESSAGE_CREATED', message: { text: 'x' } }, key)).statusCode).toBe(400);
    expect((await post(bot, { ...note, timestamp: 2 ** 70 }, key)).statusCode).toBe(400);
    expect((await post(bot, { webhookType: 'CHAT_SYSTEM', recipient: { chat_id: 'chat:C1' } }, key)).statusCode).toBe(200);
    expect(
      (
        await hook.request({
          method: 'POST',
          url: `/channels/ok/99999?key=${key}`,
          payload: JSON.stringify(note),
          headers: { 'content-type': 'application/json' },
        })
      ).statusCode,
    ).toBe(404);
    expect(await messagesOf(hook, bot.integration.id)).toEqual([]);
  });
});

describe('sending through OK', () => {
  let bot: Bot;
  let leadId: number;
  let owner: SignedUp;
  beforeAll(async () => {
    bot = await connect(hook);
    owner = bot.owner;
    await deliver(bot, ok.messageCreated(bot.group, '777', 'Cchat777', { text: 'Hello' }));
    leadId = (await messagesOf(hook, bot.integration.id))[0]!.lead_id;
  });
  const send = (payload: object) => hook.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });

  it('posts text to /graph/me/messages/chat:<id> and stores the mid', async () => {
    const res = await send({ message: { text: 'Yes, every morning' } });
    expect(res.statusCode).toBe(200);
    const call = ok.callsOf('messages/chat:Cchat777').at(-1)!;
    expect(call.contentType).toMatch(/^application\/json/);
    expect(call.body).toEqual({ recipient: { chat_id: 'chat:Cchat777' }, message: { text: 'Yes, every morning' } });
    expect((await messagesOf(hook, bot.integration.id)).at(-1)!.external_id).toBe(ok.sent.at(-1)!.mid);
  });

  it('sends pictures by URL and files through fileUploadUrl; the upload media object is mime, name, url, type, size', async () => {
    const pic = await postForm(hook, '/v1.3/messaging/upload', owner.access, [
      ['said', String(bot.integration.id)],
      ['media', { data: sample('jpeg'), type: 'image/jpeg', filename: 'rye.jpg' }],
    ]);
    expect(Object.keys(pic.json().media).sort()).toEqual(['mime', 'name', 'size', 'type', 'url']);
    expect((await send({ message: { text: 'Look', attachment: { type: 'photo', media: pic.json().media } } })).statusCode).toBe(200);
    expect(ok.sent.at(-1)!.message).toEqual({ text: 'Look', attachments: [{ type: 'IMAGE', payload: { url: pic.json().media.url } }] });

    const doc = await postForm(hook, '/v1.3/messaging/upload', owner.access, [
      ['said', String(bot.integration.id)],
      ['media', { data: sample('pdf'), type: 'application/pdf', filename: 'menu.pdf' }],
    ]);
    expect((await send({ message: { attachment: { type: 'doc', media: doc.json().media } } })).statusCode).toBe(200);
    const upload = ok.uploads.at(-1)!;
    expect(upload.name).toBe('menu.pdf');
    expect(upload.bytes).toEqual(Buffer.from(sample('pdf')));
    expect(ok.sent.at(-1)!.message).toEqual({ attachments: [{ type: 'FILE', payload: { token: upload.token } }] });
  });

  it('retries once after flood control (error 8); twice -> 429 with Retry-After', async () => {
    hook.services.bots.wait = async () => {};
    ok.failNext('messages/', 8, 'FLOOD_BLOCKED : Flood');
    expect((await send({ message: { text: 'after the flood' } })).statusCode).toBe(200);
    ok.failNext('messages/', 8, 'FLOOD_BLOCKED : Flood');
    ok.failNext('messages/', 8, 'FLOOD_BLOCKED : Flood');
    const res = await send({ message: { text: 'still flooding' } });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('answers 422 with the reason when OK refuses, and flips to "auth failure" on an expired token', async () => {
    ok.failNext('messages/', 455, 'CHAT_NOT_FOUND : chat not found');
    const refused = await send({ message: { text: 'hello?' } });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toContain('CHAT_NOT_FOUND');
    ok.failNext('messages/', 102, 'PARAM_SESSION_EXPIRED : Session expired');
    expect((await send({ message: { text: 'anyone?' } })).statusCode).toBe(422);
    const list = await hook.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.json()[0].status).toBe('auth failure');
  });
});

describe('OK long polling', () => {
  it('subscribes with longPolling without a public address, reads updates from a durable marker', async () => {
    const bot = await connect(poll);
    expect(bot.group.longPolling).toBe(true);
    expect(ok.callsOf('subscribe').at(-1)!.body).toEqual({ types: ['MESSAGE_CREATED'], longPolling: true });
    const poller = () => new LongPoller(new OkPollSource(poll.services.social, poll.services.deps.log), poll.services.deps.log, 0);
    const first = poller();
    expect(await first.runOnce()).toBe(0);
    ok.queue(bot.group, ok.messageCreated(bot.group, '5', 'Cp1', { text: 'one' }));
    ok.queue(bot.group, ok.messageCreated(bot.group, '5', 'Cp1', { text: 'two' }));
    expect(await first.runOnce()).toBe(2);
    expect(await poller().runOnce()).toBe(0);
    ok.queue(bot.group, ok.messageCreated(bot.group, '5', 'Cp1', { text: 'three' }));
    expect(await poller().runOnce()).toBe(1);
    expect((await messagesOf(poll, bot.integration.id)).map((m) => m.text)).toEqual(['one', 'two', 'three']);
  });
});
