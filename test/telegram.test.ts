import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeTelegram } from './helpers/fake-telegram.js';
import { postForm, sample } from './helpers/multipart.js';
import { TelegramPoller } from '../src/channels/telegram/telegram-poller.js';

const PUBLIC = 'https://parley.example.com';
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(200, 1)]);
const OGG = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(100, 2)]);
const MP3 = Buffer.concat([Buffer.from('ID3'), Buffer.alloc(100, 3)]);
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([100, 0, 0, 0]), Buffer.from('WEBPVP8 '), Buffer.alloc(100, 4)]);

let tg: FakeTelegram;
/** Long polling (no public address) and webhook (PARLEY_PUBLIC_URL) installations. */
let poll: Harness;
let hook: Harness;
let seq = 0;

beforeAll(async () => {
  tg = await FakeTelegram.start();
  poll = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url } });
  hook = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url, PARLEY_PUBLIC_URL: PUBLIC } });
  for (const h of [poll, hook]) h.services.bots.wait = async () => {};
});
afterAll(async () => {
  await poll?.close();
  await hook?.close();
  await tg?.close();
});
beforeEach(() => {
  tg.calls.length = 0;
});

const db = (h: Harness) => h.database.db.kysely;

/** A fresh bot token known to the fake API, connected through the API. */
async function connectBot(h: Harness, owner: SignedUp) {
  const n = ++seq;
  const token = `${7000 + n}:AAH-token-${n}`;
  const botId = 7000 + n;
  tg.addBot(token, { id: botId, username: `shop${n}_bot`, first_name: `Shop ${n}` });
  tg.photos.set(botId, `bot-photo-${n}`);
  tg.addFile(`bot-photo-${n}`, Buffer.from(sample('jpeg')), 'image/jpeg', `photos/bot-${n}.jpg`);
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'msgrb_bot', credentials: { token } },
  });
  expect(res.statusCode).toBe(200);
  return {
    token,
    botId,
    integration: res.json() as {
      id: number;
      status: string;
      login: string;
      externalId: string;
      identifier: string;
      url: string;
      avatar: string;
    },
  };
}

function customer(_h: Harness) {
  const id = 900_000 + ++seq;
  tg.chats.set(String(id), { first_name: 'Ada', last_name: 'Lovelace', username: `ada${id}` });
  return id;
}

const message = (userId: number, extra: Record<string, unknown>) => ({
  message: {
    message_id: ++seq,
    date: 1772366400 + seq,
    chat: { id: userId, type: 'private', first_name: 'Ada' },
    from: { id: userId, is_bot: false, first_name: 'Ada', last_name: 'Lovelace', username: `ada${userId}` },
    ...extra,
  },
});

const messagesOf = (h: Harness, integrationId: number) =>
  db(h).selectFrom('messages').selectAll().where('integration_id', '=', integrationId).orderBy('id').execute();

function webhook(h: Harness, integrationId: number, body: unknown, secret: string | undefined) {
  return h.request({
    method: 'POST',
    url: `/channels/telegram/${integrationId}`,
    headers: { 'content-type': 'application/json', ...(secret === undefined ? {} : { 'x-telegram-bot-api-secret-token': secret }) },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const poller = (h: Harness) => new TelegramPoller(h.services.bots, h.services.deps.log, 0);

describe('connecting a Telegram bot', () => {
  it('checks the token with getMe and fills login, externalId, identifier, avatar and url (polling: webhook removed)', async () => {
    const owner = await poll.signUp();
    const { integration, botId } = await connectBot(poll, owner);
    expect(integration).toMatchObject({ status: 'active', externalId: String(botId) });
    expect(integration.login).toBe(integration.identifier);
    expect(integration.identifier).toMatch(/^shop\d+_bot$/);
    expect(integration.url).toBe(`https://t.me/${integration.identifier}`);
    expect(integration.avatar).toMatch(/^\/files\/[A-Za-z0-9_-]{22}\//);
    expect(tg.callsOf('getMe')).toHaveLength(1);
    expect(tg.callsOf('deleteWebhook')).toHaveLength(1);
    expect(tg.callsOf('setWebhook')).toHaveLength(0);
    const avatar = await poll.request({ method: 'GET', url: integration.avatar });
    expect(avatar.statusCode).toBe(200);
    expect(Buffer.from(avatar.rawPayload)).toEqual(Buffer.from(sample('jpeg')));
  });

  it('keeps a refused token with status "auth failure"', async () => {
    const owner = await poll.signUp();
    const res = await poll.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrb_bot', credentials: { token: '1:unknown' } },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('auth failure');
  });

  it('registers the webhook with a per-integration secret_token when PARLEY_PUBLIC_URL is set; DELETE removes it', async () => {
    const owner = await hook.signUp();
    const a = await connectBot(hook, owner);
    const first = tg.webhook!;
    expect(first.url).toBe(`${PUBLIC}/channels/telegram/${a.integration.id}`);
    expect(first.secret_token).toMatch(/^[A-Za-z0-9_-]{20,256}$/);
    expect(tg.callsOf('setWebhook')[0]!.params.allowed_updates).toEqual(['message']);
    const b = await connectBot(hook, owner);
    expect(tg.webhook!.secret_token).not.toBe(first.secret_token);
    expect(b.integration.id).not.toBe(a.integration.id);

    tg.calls.length = 0;
    const del = await hook.request({ method: 'DELETE', url: `/v1.3/integrations/${b.integration.id}`, token: owner.access });
    expect(del.statusCode).toBe(200);
    expect(tg.callsOf('deleteWebhook').map((c) => c.token)).toEqual([b.token]);
  });
});

describe('Telegram webhook', () => {
  let owner: SignedUp;
  let bot: Awaited<ReturnType<typeof connectBot>>;
  let secret: string;
  beforeAll(async () => {
    owner = await hook.signUp();
    bot = await connectBot(hook, owner);
    secret = tg.webhook!.secret_token!;
  });

  it('stores a message sent with the right secret, once however often Telegram delivers it', async () => {
    const user = customer(hook);
    const update = { update_id: 1, ...message(user, { text: 'Hello bot' }) };
    for (let i = 0; i < 2; i++) {
      const res = await webhook(hook, bot.integration.id, update, secret);
      expect(res.statusCode).toBe(200);
    }
    const stored = await messagesOf(hook, bot.integration.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ text: 'Hello bot', incoming: 1, external_id: `${user}:${update.message.message_id}` });
    const profile = await db(hook)
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', bot.integration.id)
      .executeTakeFirstOrThrow();
    expect(profile).toMatchObject({
      social_id: String(user),
      name: 'Ada Lovelace',
      login: `ada${user}`,
      profile_url: `https://t.me/ada${user}`,
    });
  });

  it('answers 401 and stores nothing without or with a wrong secret', async () => {
    const before = (await messagesOf(hook, bot.integration.id)).length;
    const update = { update_id: 2, ...message(customer(hook), { text: 'forged' }) };
    expect((await webhook(hook, bot.integration.id, update, undefined)).statusCode).toBe(401);
    expect((await webhook(hook, bot.integration.id, update, 'wrong')).statusCode).toBe(401);
    // Another integration's secret is wrong here too.
    const other = await connectBot(hook, owner);
    expect((await webhook(hook, bot.integration.id, update, tg.webhook!.secret_token)).statusCode).toBe(401);
    expect(other.integration.id).not.toBe(bot.integration.id);
    expect(await messagesOf(hook, bot.integration.id)).toHaveLength(before);
  });

  it('answers 400 to malformed payloads and ignores unknown update kinds, storing nothing', async () => {
    const before = (await messagesOf(hook, bot.integration.id)).length;
    expect((await webhook(hook, bot.integration.id, '{not json', secret)).statusCode).toBe(400);
    expect((await webhook(hook, bot.integration.id, { message: { text: 'no update id' } }, secret)).statusCode).toBe(400);
    expect((await webhook(hook, bot.integration.id, { update_id: 3, message: { message_id: 'x', chat: {} } }, secret)).statusCode).toBe(
      400,
    );
    const edited = await webhook(
      hook,
      bot.integration.id,
      { update_id: 4, edited_message: message(customer(hook), { text: 'edit' }).message },
      secret,
    );
    expect(edited.statusCode).toBe(200);
    expect((await webhook(hook, bot.integration.id, { update_id: 5, callback_query: { id: 'q' } }, secret)).statusCode).toBe(200);
    expect(await messagesOf(hook, bot.integration.id)).toHaveLength(before);
    expect((await webhook(hook, 999_999, { update_id: 6 }, secret)).statusCode).toBe(404);
  });

  it('is listed in the OpenAPI document', async () => {
    const doc = (await hook.request({ method: 'GET', url: '/docs/openapi.json' })).json();
    expect(doc.paths['/channels/telegram/{integrationId}']?.post).toBeDefined();
    expect(doc.paths['/channels/viber/{integrationId}']?.post).toBeDefined();
  });
});

describe('Telegram long polling', () => {
  it('stores every update once across a restart in the middle of a batch', async () => {
    const owner = await poll.signUp();
    const bot = await connectBot(poll, owner);
    const user = customer(poll);
    tg.addFile('photo-mid', Buffer.from(sample('jpeg')), 'image/jpeg', 'photos/mid.jpg');
    const u1 = tg.queueUpdate(bot.token, message(user, { text: 'one' }));
    tg.queueUpdate(bot.token, message(user, { photo: [{ file_id: 'photo-mid', width: 90, height: 90 }], caption: 'two' }));
    tg.queueUpdate(bot.token, message(user, { text: 'three' }));
    // The photo download fails: the first worker stores "one", then stops in the middle of the batch.
    tg.failNext('getFile', 502, { ok: false, error_code: 502, description: 'Bad Gateway' });
    const first = poller(poll);
    expect(await first.runOnce()).toBe(1);
    await first.stop();
    expect((await messagesOf(poll, bot.integration.id)).map((m) => m.text)).toEqual(['one']);
    expect(await poll.services.bots.pollOffset(bot.integration.id)).toBe(Number(u1.update_id) + 1);

    // A new worker on the same database goes on from the saved offset.
    const second = poller(poll);
    expect(await second.runOnce()).toBe(2);
    tg.queueUpdate(bot.token, message(user, { text: 'four' }));
    expect(await second.runOnce()).toBe(1);
    expect(await second.runOnce()).toBe(0);
    await second.stop();
    const stored = await messagesOf(poll, bot.integration.id);
    expect(stored.map((m) => m.text)).toEqual(['one', 'two', 'three', 'four']);
    expect(new Set(stored.map((m) => m.external_id)).size).toBe(4);
    expect(JSON.parse(stored[1]!.attachments)[0]).toMatchObject({ type: 'photo' });
    // Each getUpdates asked from the saved offset (confirming what was stored).
    const offsets = tg
      .callsOf('getUpdates')
      .filter((c) => c.token === bot.token)
      .map((c) => c.params.offset);
    expect(offsets[0]).toBe(0);
    expect(offsets.at(-1)).toBe(Number(u1.update_id) + 4);
  });

  it('maps every message kind to its attachment, downloading media into Parley storage', async () => {
    const owner = await poll.signUp();
    const bot = await connectBot(poll, owner);
    const user = customer(poll);
    tg.photos.set(user, 'user-photo');
    tg.addFile('user-photo', Buffer.from(sample('jpeg')), 'image/jpeg', 'photos/user.jpg');
    const files: Record<string, [Buffer, string]> = {
      ph: [Buffer.from(sample('jpeg')), 'image/jpeg'],
      doc: [Buffer.from(sample('pdf')), 'application/pdf'],
      vid: [MP4, 'video/mp4'],
      aud: [MP3, 'audio/mpeg'],
      voi: [OGG, 'audio/ogg'],
      stk: [WEBP, 'image/webp'],
    };
    for (const [id, [bytes, mime]] of Object.entries(files)) tg.addFile(id, bytes, mime, `media/${id}`);
    const first = tg.queueUpdate(bot.token, message(user, { text: 'first' }));
    const firstId = (first.message as { message_id: number }).message_id;
    tg.queueUpdate(
      bot.token,
      message(user, {
        photo: [
          { file_id: 'ph-small-missing', width: 9, height: 9 },
          { file_id: 'ph', width: 800, height: 600 },
        ],
        caption: 'a photo',
      }),
    );
    tg.queueUpdate(bot.token, message(user, { document: { file_id: 'doc', file_name: 'invoice.pdf', mime_type: 'application/pdf' } }));
    tg.queueUpdate(bot.token, message(user, { video: { file_id: 'vid', mime_type: 'video/mp4', duration: 3 } }));
    tg.queueUpdate(bot.token, message(user, { audio: { file_id: 'aud', file_name: 'song.mp3', mime_type: 'audio/mpeg' } }));
    tg.queueUpdate(bot.token, message(user, { voice: { file_id: 'voi', mime_type: 'audio/ogg', duration: 2 } }));
    tg.queueUpdate(bot.token, message(user, { sticker: { file_id: 'stk', emoji: '🙂', is_animated: false, is_video: false } }));
    tg.queueUpdate(bot.token, message(user, { location: { latitude: 52.52, longitude: 13.405 } }));
    tg.queueUpdate(bot.token, message(user, { contact: { phone_number: '+4930123456', first_name: 'Bob', last_name: 'Builder' } }));
    tg.queueUpdate(
      bot.token,
      message(user, { text: 'answering you', reply_to_message: { message_id: firstId, date: 1, chat: { id: user, type: 'private' } } }),
    );
    expect(await poller(poll).runOnce()).toBe(10);

    const stored = await messagesOf(poll, bot.integration.id);
    const kinds = stored.map((m) => (JSON.parse(m.attachments) as Array<{ type: string }>).map((a) => a.type).join(','));
    expect(kinds).toEqual(['', 'photo', 'doc', 'video', 'audio', 'audio', 'sticker', 'link', '', '']);
    const att = (i: number) => JSON.parse(stored[i]!.attachments)[0] as { url: string; text: string };
    for (const [i, id] of [
      [1, 'ph'],
      [2, 'doc'],
      [3, 'vid'],
      [4, 'aud'],
      [5, 'voi'],
      [6, 'stk'],
    ] as const) {
      expect(att(i).url).toMatch(/^\/files\/[A-Za-z0-9_-]{22}\//);
      const got = await poll.request({ method: 'GET', url: att(i).url });
      expect(got.statusCode, id).toBe(200);
      expect(Buffer.from(got.rawPayload), id).toEqual(files[id]![0]);
    }
    expect(stored[1]!.text).toBe('a photo');
    expect(att(2).text).toBe('invoice.pdf');
    expect(att(7).url).toContain('mlat=52.52');
    expect(stored[8]!.text).toBe('Contact: Bob Builder, +4930123456');
    expect(JSON.parse(stored[9]!.reply_to!)).toMatchObject({ message: { text: 'first' } });

    const profile = await db(poll)
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', bot.integration.id)
      .executeTakeFirstOrThrow();
    expect(profile.avatar).toMatch(/^\/files\//);
    // The avatar is downloaded once, not for every message.
    expect(tg.callsOf('getUserProfilePhotos').filter((c) => c.params.user_id === user)).toHaveLength(1);

    const history = await poll.request({
      method: 'POST',
      url: `/v1.3/messaging/${stored[0]!.lead_id}/history/${stored[0]!.source_id}`,
      token: owner.access,
      payload: {},
    });
    const reply = history.json().messages.find((m: { message: { text: string } }) => m.message.text === 'answering you');
    expect(reply.replyTo.message.text).toBe('first');
  });
});

describe('sending through Telegram', () => {
  let owner: SignedUp;
  let bot: Awaited<ReturnType<typeof connectBot>>;
  let user: number;
  let leadId: number;
  let incoming: { id: number; external_id: string | null };
  beforeAll(async () => {
    owner = await poll.signUp();
    bot = await connectBot(poll, owner);
    user = customer(poll);
    tg.queueUpdate(bot.token, message(user, { text: 'I need help' }));
    await poller(poll).runOnce();
    const [row] = await messagesOf(poll, bot.integration.id);
    leadId = row!.lead_id;
    incoming = row!;
  });
  const send = (payload: object) => poll.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  const outgoing = async () => (await messagesOf(poll, bot.integration.id)).filter((m) => !m.incoming);

  it('sends text as a native reply and stores the provider message id', async () => {
    const res = await send({ message: { text: 'How can we help?' }, replyId: incoming.id });
    expect(res.statusCode).toBe(200);
    const [call] = tg.callsOf('sendMessage');
    expect(call!.params).toMatchObject({ chat_id: String(user), text: 'How can we help?' });
    expect(call!.params.reply_parameters).toMatchObject({ message_id: Number(incoming.external_id!.split(':')[1]) });
    const stored = (await outgoing()).at(-1)!;
    expect(stored.external_id).toMatch(new RegExp(`^${user}:\\d+$`));
    expect(res.json()[0].replyTo.message.text).toBe('I need help');
  });

  it('uploads a photo with its caption (upload answers the "all others" media shape)', async () => {
    const up = await postForm(poll, '/v1.3/messaging/upload', owner.access, [
      ['said', String(bot.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'offer.png' }],
    ]);
    expect(up.statusCode).toBe(200);
    const media = up.json().media;
    expect(Object.keys(media).sort()).toEqual(['mime', 'name', 'path']);
    const res = await send({ message: { text: 'Our offer', attachment: { type: 'photo', media } } });
    expect(res.statusCode).toBe(200);
    const [call] = tg.callsOf('sendPhoto');
    expect(call!.params).toMatchObject({ chat_id: String(user), caption: 'Our offer' });
    expect(call!.files.photo!.bytes).toEqual(Buffer.from(sample('png')));
    expect(call!.files.photo!.name).toBe('offer.png');
    const stored = (await outgoing()).at(-1)!;
    expect(stored.text).toBe('Our offer');
    expect(JSON.parse(stored.attachments)[0]).toMatchObject({ type: 'photo', text: 'offer.png' });
  });

  it('splits a text longer than 4096 characters and stores each part with its id', async () => {
    const text = `${'a'.repeat(3000)} ${'b'.repeat(3000)}`;
    const res = await send({ message: { text } });
    expect(res.statusCode).toBe(200);
    const calls = tg.callsOf('sendMessage');
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => c.params.text).join('')).toBe(text);
    expect(res.json()).toHaveLength(2);
    const stored = (await outgoing()).slice(-2);
    expect(stored.map((m) => m.text).join('')).toBe(text);
    expect(new Set(stored.map((m) => m.external_id)).size).toBe(2);
  });

  it('answers 422 with the reason when Telegram refuses (blocked bot), storing nothing', async () => {
    tg.blocked.add(String(user));
    const before = (await outgoing()).length;
    const res = await send({ message: { text: 'hello?' } });
    tg.blocked.delete(String(user));
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('bot was blocked by the user');
    expect(await outgoing()).toHaveLength(before);
  });

  it('honours retry_after: retries once after the wait Telegram asked for', async () => {
    const waits: number[] = [];
    poll.services.bots.wait = async (ms) => {
      waits.push(ms);
    };
    tg.rateLimitNext('sendMessage', 3);
    const res = await send({ message: { text: 'after the limit' } });
    expect(res.statusCode).toBe(200);
    expect(waits).toEqual([3000]);
    expect(tg.callsOf('sendMessage')).toHaveLength(2);
    expect((await outgoing()).filter((m) => m.text === 'after the limit')).toHaveLength(1);
  });

  it('answers 429 rate_limited with Retry-After when the wait does not fit the send timeout', async () => {
    tg.rateLimitNext('sendMessage', 120);
    const before = (await outgoing()).length;
    const res = await send({ message: { text: 'too soon' } });
    expect(res.statusCode).toBe(429);
    expect(res.json().code).toBe('rate_limited');
    expect(res.headers['retry-after']).toBe('120');
    expect(await outgoing()).toHaveLength(before);
  });

  it('flips the integration to "auth failure" when the token was revoked, and stops polling it', async () => {
    tg.revoke(bot.token);
    const res = await send({ message: { text: 'anyone?' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('Unauthorized');
    const list = await poll.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.json().find((i: { id: number }) => i.id === bot.integration.id).status).toBe('auth failure');
    tg.calls.length = 0;
    await poller(poll).runOnce();
    expect(tg.calls.filter((c) => c.token === bot.token)).toHaveLength(0);
  });
});
