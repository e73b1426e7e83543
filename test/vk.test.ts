import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeVk } from './helpers/fake-vk.js';
import { postForm, sample } from './helpers/multipart.js';

const PUBLIC = 'https://parley.example.com';

let vk: FakeVk;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  vk = await FakeVk.start();
  h = await createHarness({ env: { PARLEY_VK_API_URL: vk.apiUrl, PARLEY_PUBLIC_URL: PUBLIC } });
  h.services.bots.wait = async () => {};
});
afterAll(async () => {
  await h?.close();
  await vk?.close();
});
beforeEach(() => {
  vk.calls.length = 0;
});

const db = () => h.database.db.kysely;
type Integration = {
  id: number;
  status: string;
  login: string;
  externalId: string;
  identifier: string;
  url: string;
  avatar: string;
  type: string;
};

async function connect(owner: SignedUp, harness = h) {
  const n = ++seq;
  const token = `vk1.a.community-token-${n}`;
  const community = vk.addCommunity(token, 200_000 + n, `shop${n}`);
  const res = await harness.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'social2_group', credentials: { token, groupId: String(community.id) } },
  });
  expect(res.statusCode).toBe(200);
  return { token, community, integration: res.json() as Integration };
}

function user(allowsMessages = true) {
  const id = 10_000 + ++seq;
  vk.users.set(id, {
    first_name: 'Ada',
    last_name: `Lovelace${id}`,
    screen_name: `ada${id}`,
    photo_200: `https://sun.userapi.example/u${id}.jpg`,
    allowsMessages,
  });
  return id;
}

let messageId = 1000;
const vkMessage = (from: number, extra: Record<string, unknown> = {}) => ({
  id: ++messageId,
  date: 1772366400 + messageId,
  peer_id: from,
  from_id: from,
  text: '',
  out: 0,
  attachments: [],
  fwd_messages: [],
  conversation_message_id: messageId,
  ...extra,
});
const messageNew = (from: number, extra: Record<string, unknown> = {}) => ({
  message: vkMessage(from, extra),
  client_info: { keyboard: true, lang_id: 0 },
});

type Bot = Awaited<ReturnType<typeof connect>>;
const url = (bot: Bot) => `${PUBLIC}/channels/vk/${bot.integration.id}`;
const post = (integrationId: number, payload: string) =>
  h.request({ method: 'POST', url: `/channels/vk/${integrationId}`, headers: { 'content-type': 'application/json' }, payload });
const deliver = (bot: Bot, type: string, object: Record<string, unknown>) =>
  post(bot.integration.id, vk.callback(bot.community, url(bot), vk.event(bot.community, type, object)));
const messagesOf = (integrationId: number) =>
  db().selectFrom('messages').selectAll().where('integration_id', '=', integrationId).orderBy('id').execute();

describe('connecting a VK community', () => {
  it('checks the token with groups.getById and registers its own Callback API server with a secret, form-encoded', async () => {
    const owner = await h.signUp();
    const bot = await connect(owner);
    expect(bot.integration).toMatchObject({
      type: 'social2_group',
      status: 'active',
      login: bot.community.screen_name,
      externalId: String(bot.community.id),
      identifier: String(bot.community.id),
      avatar: bot.community.photo_200,
      url: `https://vk.com/${bot.community.screen_name}`,
    });
    const [server] = bot.community.servers;
    expect(server).toMatchObject({ url: url(bot), title: 'Parley' });
    expect(server!.secret_key).toMatch(/^[A-Za-z0-9]{20,50}$/);
    expect(server!.settings).toMatchObject({
      api_version: '5.199',
      message_new: '1',
      message_reply: '1',
      message_edit: '1',
      wall_reply_new: '1',
      photo_comment_new: '1',
      video_comment_new: '1',
      market_comment_new: '1',
    });
    expect(vk.calls.length).toBeGreaterThan(0);
    for (const call of vk.calls) {
      expect(call.contentType).toBe('application/x-www-form-urlencoded');
      expect(call.params.v).toBe('5.199');
    }
  });

  it('answers the confirmation event with the string of groups.getCallbackConfirmationCode', async () => {
    const bot = await connect(await h.signUp());
    const res = await post(bot.integration.id, JSON.stringify({ type: 'confirmation', group_id: bot.community.id }));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    expect(res.body).toBe(bot.community.confirmation);
  });

  it('removes its Callback API server on DELETE', async () => {
    const owner = await h.signUp();
    const bot = await connect(owner);
    await h.request({ method: 'DELETE', url: `/v1.3/integrations/${bot.integration.id}`, token: owner.access });
    expect(bot.community.servers).toEqual([]);
    expect(vk.callsOf('groups.deleteCallbackServer')).toHaveLength(1);
  });

  it('refuses to connect (400, nothing kept) when VK will not register the callback server', async () => {
    const owner = await h.signUp();
    const community = vk.addCommunity('vk1.a.no-manage', 777_002, 'nomanage');
    vk.failNext('groups.addCallbackServer', 15, 'Access denied: no access to call this method');
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social2_group', credentials: { token: 'vk1.a.no-manage', groupId: String(community.id) } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toContain('Access denied');
    expect(await db().selectFrom('integrations').selectAll().where('account_id', '=', owner.accountId).execute()).toEqual([]);
  });

  it('keeps a refused token as "auth failure"; refuses an unknown or mismatched community, keeping nothing', async () => {
    const owner = await h.signUp();
    const refused = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social2_group', credentials: { token: 'nope', groupId: '1' } },
    });
    expect(refused.json().status).toBe('auth failure');
    const other = vk.addCommunity('vk1.a.other', 777_001, 'other');
    for (const groupId of ['123', 'club1', '-0']) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/integrations',
        token: owner.access,
        payload: { type: 'social2_group', credentials: { token: 'vk1.a.other', groupId } },
      });
      expect(res.statusCode, groupId).toBe(400);
    }
    const missing = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social2_group', credentials: { token: 'vk1.a.other' } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toContain('groupId');
    expect(other.servers).toEqual([]);
    const rows = await db().selectFrom('integrations').selectAll().where('account_id', '=', owner.accountId).execute();
    expect(rows.map((r) => r.status)).toEqual(['auth failure']);
  });
});

describe('VK callbacks', () => {
  let bot: Bot;
  beforeAll(async () => {
    bot = await connect(await h.signUp());
  });

  it('stores message_new once however often VK redelivers it, answering ok; the profile comes from users.get', async () => {
    const from = user();
    const event = vk.event(bot.community, 'message_new', messageNew(from, { text: 'Hello shop' }));
    for (let i = 0; i < 2; i++) {
      const res = await post(bot.integration.id, vk.callback(bot.community, url(bot), event));
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe('ok');
    }
    const stored = await messagesOf(bot.integration.id);
    expect(stored.filter((m) => m.text === 'Hello shop')).toHaveLength(1);
    const profile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', bot.integration.id)
      .where('social_id', '=', String(from))
      .executeTakeFirstOrThrow();
    expect(profile).toMatchObject({
      name: `Ada Lovelace${from}`,
      login: `ada${from}`,
      avatar: `https://sun.userapi.example/u${from}.jpg`,
      profile_url: `https://vk.com/ada${from}`,
    });
    expect(vk.callsOf('users.get')).toHaveLength(1);
  });

  it('refuses a wrong or missing secret (401), another community (400), malformed bodies (400) and unknown integrations (404), storing nothing', async () => {
    const before = (await messagesOf(bot.integration.id)).length;
    const event = vk.event(bot.community, 'message_new', messageNew(user(), { text: 'forged' }));
    expect((await post(bot.integration.id, JSON.stringify(event))).statusCode).toBe(401);
    expect((await post(bot.integration.id, JSON.stringify({ ...event, secret: 'wrong' }))).statusCode).toBe(401);
    const signed = JSON.parse(vk.callback(bot.community, url(bot), event));
    expect((await post(bot.integration.id, JSON.stringify({ ...signed, group_id: 1 }))).statusCode).toBe(400);
    expect((await post(bot.integration.id, JSON.stringify({ type: 'confirmation', group_id: 1 }))).statusCode).toBe(400);
    expect((await post(bot.integration.id, '{oops')).statusCode).toBe(400);
    expect((await post(bot.integration.id, JSON.stringify({ ...signed, object: { message: { id: 'x' } } }))).statusCode).toBe(400);
    expect(
      (
        await post(
          bot.integration.id,
          JSON.stringify({ ...signed, object: { message: { ...signed.object.message, text: 'a\u0000b', id: 2 ** 60 } } }),
        )
      ).statusCode,
    ).toBe(400);
    expect((await post(999_999, JSON.stringify(signed))).statusCode).toBe(404);
    // NUL characters mean nothing in a message (and PostgreSQL refuses them): stored without.
    const nul = vk.event(bot.community, 'message_new', messageNew(user(), { text: 'nul\u0000byte' }));
    expect((await post(bot.integration.id, vk.callback(bot.community, url(bot), nul))).body).toBe('ok');
    expect((await messagesOf(bot.integration.id)).at(-1)!.text).toBe('nulbyte');
    expect((await post(bot.integration.id, JSON.stringify({ ...signed, type: 'group_join' }))).body).toBe('ok');
    expect(await messagesOf(bot.integration.id)).toHaveLength(before + 1);
  });

  it('maps photos, documents, voice messages, videos, stickers, links, wall posts and goods; replies and forwards quote', async () => {
    const from = user();
    const jpeg = Buffer.from(sample('jpeg'));
    const pdf = Buffer.from(sample('pdf'));
    const png = Buffer.from(sample('png'));
    const ogg = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(100, 2)]);
    const first = vkMessage(from, { text: 'first question' });
    expect((await deliver(bot, 'message_new', { message: first })).statusCode).toBe(200);
    const attachments = [
      {
        type: 'photo',
        photo: {
          id: 1,
          owner_id: from,
          sizes: [
            { type: 's', url: `${vk.url}/media/small`, width: 75, height: 50 },
            { type: 'w', url: vk.addMedia('big.jpg', jpeg, 'image/jpeg'), width: 1280, height: 960 },
          ],
        },
      },
      {
        type: 'doc',
        doc: {
          id: 2,
          owner_id: from,
          title: 'invoice.pdf',
          size: pdf.length,
          ext: 'pdf',
          url: vk.addMedia('invoice.pdf', pdf, 'application/pdf'),
        },
      },
      {
        type: 'audio_message',
        audio_message: {
          id: 3,
          owner_id: from,
          duration: 2,
          link_ogg: vk.addMedia('voice.ogg', ogg, 'audio/ogg'),
          link_mp3: `${vk.url}/media/none.mp3`,
        },
      },
      {
        type: 'video',
        video: { id: 4, owner_id: from, title: 'Unboxing', image: [{ url: 'https://sun.userapi.example/v.jpg', width: 320, height: 240 }] },
      },
      {
        type: 'sticker',
        sticker: { sticker_id: 9, product_id: 1, images: [{ url: vk.addMedia('sticker.png', png, 'image/png'), width: 128, height: 128 }] },
      },
      { type: 'link', link: { url: 'https://example.com/page', title: 'A page' } },
      { type: 'wall', wall: { id: 55, owner_id: -bot.community.id, from_id: -bot.community.id, text: 'Our sale' } },
      { type: 'market', market: { id: 66, owner_id: -bot.community.id, title: 'Red shoes' } },
    ];
    const res = await deliver(
      bot,
      'message_new',
      messageNew(from, { text: 'see these', attachments, reply_message: { id: first.id, text: 'first question' }, fwd_messages: [] }),
    );
    expect(res.statusCode).toBe(200);
    const forwarded = await deliver(
      bot,
      'message_new',
      messageNew(from, { text: 'and this', fwd_messages: [{ id: first.id, from_id: from, text: 'first question', date: 1 }] }),
    );
    expect(forwarded.statusCode).toBe(200);
    const [, withFiles, fwd] = (await messagesOf(bot.integration.id)).filter((m) => m.source_id !== null).slice(-3);
    const att = JSON.parse(withFiles!.attachments) as Array<{ type: string; url: string; text: string; preview?: string }>;
    expect(att.map((a) => a.type)).toEqual(['photo', 'doc', 'audio', 'video', 'sticker', 'link', 'link', 'market']);
    for (const [i, bytes] of [
      [0, jpeg],
      [1, pdf],
      [2, ogg],
      [4, png],
    ] as const) {
      expect(att[i]!.url).toMatch(new RegExp(`^${PUBLIC}/files/`));
      expect(Buffer.from((await h.request({ method: 'GET', url: att[i]!.url.slice(PUBLIC.length) })).rawPayload)).toEqual(bytes);
    }
    expect(att[1]!.text).toBe('invoice.pdf');
    expect(att[3]).toMatchObject({ url: `https://vk.com/video${from}_4`, text: 'Unboxing', preview: 'https://sun.userapi.example/v.jpg' });
    expect(att[6]).toMatchObject({ url: `https://vk.com/wall-${bot.community.id}_55`, text: 'Our sale' });
    expect(att[7]).toMatchObject({ url: `https://vk.com/product-${bot.community.id}_66`, text: 'Red shoes' });
    expect(JSON.parse(withFiles!.reply_to!).message.text).toBe('first question');
    expect(fwd!.text).toBe('and this\n> first question');
    expect(JSON.parse(fwd!.reply_to!).message.text).toBe('first question');
  });

  it('stores message_reply written in VK by an administrator as outgoing, skips its own API sends, and applies message_edit', async () => {
    const from = user();
    const incoming = vkMessage(from, { text: 'typo herre' });
    await deliver(bot, 'message_new', { message: incoming });
    const reply = vkMessage(from, { text: 'Answered from vk.com', out: 1, from_id: -bot.community.id, admin_author_id: 42 });
    for (let i = 0; i < 2; i++) expect((await deliver(bot, 'message_reply', reply)).body).toBe('ok');
    await deliver(bot, 'message_reply', vkMessage(from, { text: 'sent by an app', out: 1, from_id: -bot.community.id }));
    const firstEdit = vk.event(bot.community, 'message_edit', { ...incoming, text: 'typo her' });
    expect((await post(bot.integration.id, vk.callback(bot.community, url(bot), firstEdit))).body).toBe('ok');
    expect((await deliver(bot, 'message_edit', { ...incoming, text: 'typo here' })).body).toBe('ok');
    // VK delivers the first edit again (same event_id): it must not undo the newer one.
    expect((await post(bot.integration.id, vk.callback(bot.community, url(bot), firstEdit))).body).toBe('ok');
    const stored = (await messagesOf(bot.integration.id)).slice(-2);
    expect(stored.map((m) => [m.text, m.incoming, m.external_id])).toEqual([
      ['typo here', 1, String(incoming.id)],
      ['Answered from vk.com', 0, String(reply.id)],
    ]);
    expect(stored[0]!.lead_id).toBe(stored[1]!.lead_id);
  });

  it('stores comments on posts, photos, videos and goods on channels of those types, with the commented object as preview', async () => {
    const from = user();
    const g = -bot.community.id;
    vk.objects.set(`wall${g}_7`, {
      id: 7,
      owner_id: g,
      text: 'Autumn collection is here',
      attachments: [{ type: 'photo', photo: { sizes: [{ url: 'https://sun.userapi.example/post.jpg', width: 800, height: 600 }] } }],
    });
    vk.objects.set(`market${g}_9`, { id: 9, owner_id: g, title: 'Red shoes', thumb_photo: 'https://sun.userapi.example/shoes.jpg' });
    const base = { from_id: from, date: 1772366400, text: 'How much?' };
    const events: Array<[string, Record<string, unknown>]> = [
      ['wall_reply_new', { ...base, id: 31, post_owner_id: g, post_id: 7 }],
      ['photo_comment_new', { ...base, id: 32, photo_owner_id: g, photo_id: 8 }],
      ['video_comment_new', { ...base, id: 33, video_owner_id: g, video_id: 5 }],
      ['market_comment_new', { ...base, id: 34, market_owner_id: g, item_id: 9 }],
      ['wall_reply_new', { ...base, id: 35, from_id: g, post_owner_id: g, post_id: 7 }],
    ];
    for (const [type, object] of events) expect((await deliver(bot, type, object)).body).toBe('ok');
    const stored = (await messagesOf(bot.integration.id)).slice(-4);
    const sources = await db()
      .selectFrom('sources')
      .selectAll()
      .where(
        'id',
        'in',
        stored.map((m) => m.source_id),
      )
      .orderBy('id')
      .execute();
    expect(sources.map((s) => [s.type, s.external_id])).toEqual([
      ['comment', `wall${g}_7:${from}`],
      ['photo', `photo${g}_8:${from}`],
      ['video', `video${g}_5:${from}`],
      ['market', `market${g}_9:${from}`],
    ]);
    expect(stored.map((m) => m.external_id)).toEqual([
      `wall${g}_7?reply=31`,
      `photo${g}_8?reply=32`,
      `video${g}_5?reply=33`,
      `market${g}_9?reply=34`,
    ]);
    expect(JSON.parse(stored[0]!.preview!)).toEqual({
      photo: 'https://sun.userapi.example/post.jpg',
      description: 'Autumn collection is here',
      owner: bot.community.screen_name,
      url: `https://vk.com/wall${g}_7`,
    });
    // photos.getById is refused to community tokens here: the preview keeps the link and owner.
    expect(JSON.parse(stored[1]!.preview!)).toMatchObject({ url: `https://vk.com/photo${g}_8`, description: '' });
    expect(JSON.parse(stored[3]!.preview!)).toMatchObject({ description: 'Red shoes', photo: 'https://sun.userapi.example/shoes.jpg' });
  });
});

describe('sending through VK', () => {
  let owner: SignedUp;
  let bot: Bot;
  let from: number;
  let leadId: number;
  let incomingId: number;
  beforeAll(async () => {
    owner = await h.signUp();
    bot = await connect(owner);
    from = user();
    await deliver(bot, 'message_new', messageNew(from, { text: 'I need help' }));
    const [row] = await messagesOf(bot.integration.id);
    leadId = row!.lead_id;
    incomingId = row!.id;
  });
  const send = (payload: object) => h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  const outgoing = async () => (await messagesOf(bot.integration.id)).filter((m) => !m.incoming);

  it('sends text with messages.send (form-encoded, random_id, reply_to) and stores VK message id', async () => {
    const res = await send({ message: { text: 'How can we help?' }, replyId: incomingId });
    expect(res.statusCode).toBe(200);
    const [call] = vk.callsOf('messages.send');
    expect(call!.contentType).toBe('application/x-www-form-urlencoded');
    expect(call!.params).toMatchObject({
      peer_id: String(from),
      message: 'How can we help?',
      reply_to: (await messagesOf(bot.integration.id))[0]!.external_id,
    });
    expect(Number(call!.params.random_id)).toBeGreaterThan(0);
    expect(Number(call!.params.random_id)).toBeLessThan(2 ** 31);
    expect((await outgoing()).at(-1)!.external_id).toBe(String(vk.sent.at(-1)!.id));
  });

  it('retries once after a rate error with the same random_id (delivered once); twice -> 429 with Retry-After', async () => {
    const waits: number[] = [];
    h.services.bots.wait = async (ms) => void waits.push(ms);
    const sentBefore = vk.sent.length;
    vk.failNext('messages.send', 9, 'Flood control');
    expect((await send({ message: { text: 'after the limit' }, customId: 'c-1' })).statusCode).toBe(200);
    const calls = vk.callsOf('messages.send');
    expect(calls).toHaveLength(2);
    expect(calls[0]!.params.random_id).toBe(calls[1]!.params.random_id);
    expect(waits).toEqual([1000]);
    expect(vk.sent.length).toBe(sentBefore + 1);

    for (const code of [6, 29]) {
      vk.failNext('messages.send', code, 'Too many requests per second');
      vk.failNext('messages.send', code, 'Too many requests per second');
      const before = (await outgoing()).length;
      const res = await send({ message: { text: 'still limited' } });
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('1');
      expect(await outgoing()).toHaveLength(before);
    }
  });

  it('answers 422 with the reason when the user does not allow messages (901/902), storing nothing', async () => {
    for (const [code, msg] of [
      [901, "Can't send messages for users without permission"],
      [902, "Can't send messages to this user due to their privacy settings"],
    ] as const) {
      vk.failNext('messages.send', code, msg);
      const before = (await outgoing()).length;
      const res = await send({ message: { text: 'hello?' } });
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toContain(msg);
      expect(await outgoing()).toHaveLength(before);
    }
  });

  it('uploads photos and documents through VK upload servers; the upload media object is {id, url}', async () => {
    for (const [type, kind, mime, filename] of [
      ['photo', 'jpeg', 'image/jpeg', 'offer.jpg'],
      ['doc', 'pdf', 'application/pdf', 'terms.pdf'],
    ] as const) {
      const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
        ['said', String(bot.integration.id)],
        ['media', { data: sample(kind), type: mime, filename }],
      ]);
      expect(up.statusCode).toBe(200);
      const media = up.json().media;
      expect(Object.keys(media).sort()).toEqual(['id', 'url']);
      expect(typeof media.id).toBe('number');
      const res = await send({ message: { text: `Our ${type}`, attachment: { type, media } } });
      expect(res.statusCode).toBe(200);
      const upload = vk.uploads.at(-1)!;
      expect(upload).toMatchObject({ kind: type, name: filename });
      expect(upload.bytes).toEqual(Buffer.from(sample(kind)));
      const sent = vk.sent.at(-1)!;
      expect(sent.message).toBe(`Our ${type}`);
      expect(sent.attachment).toMatch(
        type === 'photo' ? new RegExp(`^photo-${bot.community.id}_\\d+_ak1$`) : new RegExp(`^doc-${bot.community.id}_\\d+$`),
      );
    }
    expect(vk.callsOf('photos.saveMessagesPhoto')).toHaveLength(1);
    expect(vk.callsOf('docs.save')).toHaveLength(1);
  });

  it('replies to a comment with wall.createComment from the community, quoting the comment', async () => {
    const g = -bot.community.id;
    await deliver(bot, 'wall_reply_new', { id: 71, from_id: from, date: 1772366400, text: 'Price?', post_owner_id: g, post_id: 12 });
    const comment = (await messagesOf(bot.integration.id)).at(-1)!;
    const res = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${comment.lead_id}/send`,
      token: owner.access,
      payload: { source: comment.source_id, message: { text: '25 EUR' }, replyId: comment.id },
    });
    expect(res.statusCode).toBe(200);
    const [call] = vk.callsOf('wall.createComment');
    expect(call!.params).toMatchObject({
      owner_id: String(g),
      post_id: '12',
      message: '25 EUR',
      reply_to_comment: '71',
      from_group: String(bot.community.id),
    });
    expect((await messagesOf(bot.integration.id)).at(-1)!.external_id).toMatch(new RegExp(`^wall${g}_12\\?reply=\\d+$`));
  });

  it('refreshes the customer profile from users.get', async () => {
    const profile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', bot.integration.id)
      .where('social_id', '=', String(from))
      .executeTakeFirstOrThrow();
    vk.users.set(from, { ...vk.users.get(from)!, photo_200: 'https://sun.userapi.example/new.jpg', screen_name: 'ada_new' });
    const res = await h.request({ method: 'POST', url: `/v1.3/customers/${profile.customer_id}/update`, token: owner.access, payload: {} });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().avatar).toBe('https://sun.userapi.example/new.jpg');
    const updated = await db().selectFrom('profiles').selectAll().where('id', '=', profile.id).executeTakeFirstOrThrow();
    expect(updated).toMatchObject({
      login: 'ada_new',
      profile_url: 'https://vk.com/ada_new',
      avatar: 'https://sun.userapi.example/new.jpg',
    });
  });

  it('checks contacts with messages.isMessagesFromGroupAllowed', async () => {
    const check = (chatId: string) =>
      h.request({
        method: 'POST',
        url: '/v1.3/messaging/check-contact',
        token: owner.access,
        payload: { saId: bot.integration.id, chatId },
      });
    expect((await check(String(from))).statusCode).toBe(200);
    expect((await check(String(user(false)))).statusCode).toBe(404);
  });

  it('flips the integration to "auth failure" when VK refuses the token (error 5)', async () => {
    vk.failNext('messages.send', 5, 'User authorization failed: access_token has expired.');
    const res = await send({ message: { text: 'anyone?' } });
    expect(res.statusCode).toBe(422);
    const list = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.json().find((i: { id: number }) => i.id === bot.integration.id).status).toBe('auth failure');
  });
});
