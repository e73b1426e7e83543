import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeViber } from './helpers/fake-viber.js';
import { postForm, sample } from './helpers/multipart.js';

const PUBLIC = 'https://parley.example.com';
const MP4 = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(200, 1)]);

let vb: FakeViber;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  vb = await FakeViber.start();
  h = await createHarness({ env: { PARLEY_VIBER_API_URL: vb.url, PARLEY_PUBLIC_URL: PUBLIC } });
  h.services.bots.wait = async () => {};
});
afterAll(async () => {
  await h?.close();
  await vb?.close();
});
beforeEach(() => {
  vb.calls.length = 0;
});

const db = () => h.database.db.kysely;

async function connectBot(owner: SignedUp) {
  const n = ++seq;
  const token = `4b1c-viber-token-${n}`;
  vb.accounts.set(token, {
    id: `pa:7534659427546854672${n}`,
    name: `Shop ${n}`,
    uri: `shop${n}`,
    icon: `https://media.viber.example/icon${n}.jpg`,
  });
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'msgrc_bot', credentials: { token } },
  });
  expect(res.statusCode).toBe(200);
  return {
    token,
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

function subscriber() {
  const id = `u${++seq}Xk9HsWTZ2Yf2NkRZ8KcNug==`;
  vb.subscribers.set(id, { name: 'Ada Lovelace', avatar: `https://media.viber.example/avatar${seq}.jpg` });
  return id;
}

let token = 4912661846655238145n;
const callback = (userId: string, message: Record<string, unknown>) => ({
  event: 'message',
  timestamp: 1772366400000 + ++seq,
  chat_hostname: 'SN-CHAT-01_',
  message_token: '__TOKEN__',
  sender: {
    id: userId,
    name: 'Ada Lovelace',
    avatar: 'https://media.viber.example/ada.jpg',
    language: 'en',
    country: 'DE',
    api_version: 10,
  },
  message,
  silent: false,
});

/** The JSON as Viber writes it: message_token as a bare 64-bit integer. */
function raw(body: Record<string, unknown>, messageToken = (token++).toString()): string {
  return JSON.stringify(body).replace('"__TOKEN__"', messageToken);
}

function post(integrationId: number, body: string, signature: string | undefined) {
  return h.request({
    method: 'POST',
    url: `/channels/viber/${integrationId}`,
    headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'x-viber-content-signature': signature }) },
    payload: body,
  });
}

const signed = (bot: { token: string; integration: { id: number } }, body: string) =>
  post(bot.integration.id, body, FakeViber.sign(bot.token, body));
const messagesOf = (integrationId: number) =>
  db().selectFrom('messages').selectAll().where('integration_id', '=', integrationId).orderBy('id').execute();

describe('connecting a Viber bot', () => {
  it('checks the token with get_account_info, registers the webhook and fills the integration', async () => {
    const owner = await h.signUp();
    const { integration } = await connectBot(owner);
    expect(integration).toMatchObject({
      status: 'active',
      login: `Shop ${seq}`,
      externalId: `pa:7534659427546854672${seq}`,
      identifier: `shop${seq}`,
    });
    expect(integration.avatar).toBe(`https://media.viber.example/icon${seq}.jpg`);
    expect(integration.url).toBe(`viber://pa?chatURI=shop${seq}`);
    const [hook] = vb.callsOf('set_webhook');
    expect(hook!.body.url).toBe(`${PUBLIC}/channels/viber/${integration.id}`);
    expect(hook!.body.event_types).toEqual(expect.arrayContaining(['delivered', 'seen', 'failed', 'subscribed', 'conversation_started']));
  });

  it('keeps a refused token with status "auth failure"', async () => {
    const owner = await h.signUp();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrc_bot', credentials: { token: 'nope' } },
    });
    expect(res.json().status).toBe('auth failure');
  });

  it('refuses to connect without PARLEY_PUBLIC_URL (Viber delivers by webhook only), keeping nothing', async () => {
    const bare = await createHarness({ env: { PARLEY_VIBER_API_URL: vb.url } });
    try {
      const owner = await bare.signUp();
      const res = await bare.request({
        method: 'POST',
        url: '/v1.3/integrations',
        token: owner.access,
        payload: { type: 'msgrc_bot', credentials: { token: 'x' } },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toContain('PARLEY_PUBLIC_URL');
      expect(await bare.database.db.kysely.selectFrom('integrations').selectAll().execute()).toEqual([]);
    } finally {
      await bare.close();
    }
  });

  it('unregisters the webhook on DELETE', async () => {
    const owner = await h.signUp();
    const bot = await connectBot(owner);
    vb.calls.length = 0;
    expect((await h.request({ method: 'DELETE', url: `/v1.3/integrations/${bot.integration.id}`, token: owner.access })).statusCode).toBe(
      200,
    );
    expect(vb.callsOf('set_webhook').map((c) => [c.token, c.body.url])).toEqual([[bot.token, '']]);
  });
});

describe('Viber callbacks', () => {
  let owner: SignedUp;
  let bot: Awaited<ReturnType<typeof connectBot>>;
  beforeAll(async () => {
    owner = await h.signUp();
    bot = await connectBot(owner);
  });

  it('stores a signed message once, keeping the 64-bit message_token exactly', async () => {
    const user = subscriber();
    const body = raw(callback(user, { type: 'text', text: 'Hi there' }), '4912661846655238145');
    for (let i = 0; i < 2; i++) expect((await signed(bot, body)).statusCode).toBe(200);
    const stored = await messagesOf(bot.integration.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ external_id: '4912661846655238145', text: 'Hi there', incoming: 1 });
    const profile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', bot.integration.id)
      .executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: user, name: 'Ada Lovelace', avatar: 'https://media.viber.example/ada.jpg' });
  });

  it('answers 401 and stores nothing without or with a wrong signature', async () => {
    const before = (await messagesOf(bot.integration.id)).length;
    const body = raw(callback(subscriber(), { type: 'text', text: 'forged' }));
    expect((await post(bot.integration.id, body, undefined)).statusCode).toBe(401);
    expect((await post(bot.integration.id, body, FakeViber.sign('another-token', body))).statusCode).toBe(401);
    expect((await post(bot.integration.id, `${body} `, FakeViber.sign(bot.token, body))).statusCode).toBe(401);
    expect(await messagesOf(bot.integration.id)).toHaveLength(before);
  });

  it('answers 400 to malformed callbacks and acknowledges other events without storing', async () => {
    const before = (await messagesOf(bot.integration.id)).length;
    expect((await signed(bot, '{oops')).statusCode).toBe(400);
    expect((await signed(bot, JSON.stringify({ no: 'event' }))).statusCode).toBe(400);
    expect((await signed(bot, JSON.stringify({ event: 'message', timestamp: 1, sender: {}, message: {} }))).statusCode).toBe(400);
    for (const event of ['webhook', 'subscribed', 'unsubscribed', 'conversation_started', 'delivered', 'seen', 'failed', 'client_status']) {
      const res = await signed(bot, raw({ event, timestamp: 1772366400000, message_token: '__TOKEN__', user_id: 'x' }));
      expect(res.statusCode, event).toBe(200);
    }
    expect(await messagesOf(bot.integration.id)).toHaveLength(before);
  });

  it('maps pictures, videos, files, stickers, locations, contacts and links, downloading media', async () => {
    const user = subscriber();
    const jpeg = Buffer.from(sample('jpeg'));
    const pdf = Buffer.from(sample('pdf'));
    const png = Buffer.from(sample('png'));
    const bodies = [
      { type: 'picture', text: 'look', media: vb.addMedia('pic.jpg', jpeg, 'image/jpeg'), thumbnail: 'https://x/t.jpg' },
      { type: 'video', media: vb.addMedia('clip.mp4', MP4, 'video/mp4'), size: MP4.length, duration: 3 },
      { type: 'file', media: vb.addMedia('doc.pdf', pdf, 'application/pdf'), file_name: 'invoice.pdf', size: pdf.length },
      { type: 'sticker', sticker_id: 46105, media: vb.addMedia('sticker.png', png, 'image/png') },
      { type: 'location', location: { lat: 52.52, lon: 13.405 } },
      { type: 'contact', contact: { name: 'Bob Builder', phone_number: '+4930123456' } },
      { type: 'url', media: 'https://example.com/page' },
    ];
    for (const m of bodies) expect((await signed(bot, raw(callback(user, m)))).statusCode).toBe(200);
    const stored = (await messagesOf(bot.integration.id)).slice(-bodies.length);
    const att = (i: number) => JSON.parse(stored[i]!.attachments)[0] as { type: string; url: string; text: string };
    expect(stored.map((_, i) => att(i)?.type ?? '')).toEqual(['photo', 'video', 'doc', 'sticker', 'link', '', 'link']);
    for (const [i, bytes] of [
      [0, jpeg],
      [1, MP4],
      [2, pdf],
      [3, png],
    ] as const) {
      expect(att(i).url).toMatch(new RegExp(`^${PUBLIC}/files/[A-Za-z0-9_-]{22}/`));
      const got = await h.request({ method: 'GET', url: att(i).url.slice(PUBLIC.length) });
      expect(Buffer.from(got.rawPayload)).toEqual(bytes);
    }
    expect(stored[0]!.text).toBe('look');
    expect(att(2).text).toBe('invoice.pdf');
    expect(att(4).url).toContain('mlat=52.52');
    expect(stored[5]!.text).toBe('Contact: Bob Builder, +4930123456');
    expect(att(6).url).toBe('https://example.com/page');
  });
});

describe('sending through Viber', () => {
  let owner: SignedUp;
  let bot: Awaited<ReturnType<typeof connectBot>>;
  let user: string;
  let leadId: number;
  let incomingId: number;
  beforeAll(async () => {
    owner = await h.signUp();
    bot = await connectBot(owner);
    user = subscriber();
    await signed(bot, raw(callback(user, { type: 'text', text: 'I need help' })));
    const [row] = await messagesOf(bot.integration.id);
    leadId = row!.lead_id;
    incomingId = row!.id;
  });
  const send = (payload: object) => h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  const outgoing = async () => (await messagesOf(bot.integration.id)).filter((m) => !m.incoming);

  it('sends text with the bot as sender and stores the exact message_token (replyId kept in Parley)', async () => {
    const res = await send({ message: { text: 'How can we help?' }, replyId: incomingId });
    expect(res.statusCode).toBe(200);
    const [call] = vb.callsOf('send_message');
    expect(call!.token).toBe(bot.token);
    expect(call!.body).toMatchObject({ receiver: user, type: 'text', text: 'How can we help?', sender: { name: bot.integration.login } });
    const stored = (await outgoing()).at(-1)!;
    expect(stored.external_id).toMatch(/^\d{19}$/);
    expect(BigInt(stored.external_id!)).toBeGreaterThan(2n ** 53n);
    expect(res.json()[0].replyTo.message.text).toBe('I need help');
  });

  it('sends an uploaded picture by its public URL with the caption (upload answers mime, name, url, type, size)', async () => {
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(bot.integration.id)],
      ['media', { data: sample('jpeg'), type: 'image/jpeg', filename: 'offer.jpg' }],
    ]);
    expect(up.statusCode).toBe(200);
    const media = up.json().media;
    expect(Object.keys(media).sort()).toEqual(['mime', 'name', 'size', 'type', 'url']);
    const res = await send({ message: { text: 'Our offer', attachment: { type: 'photo', media } } });
    expect(res.statusCode).toBe(200);
    const [call] = vb.callsOf('send_message');
    expect(call!.body).toMatchObject({ type: 'picture', text: 'Our offer', media: media.url });
    expect(call!.body.media).toMatch(new RegExp(`^${PUBLIC}/files/`));
  });

  it('splits a text longer than 7000 characters, storing each part', async () => {
    const text = `${'a'.repeat(5000)}\n${'b'.repeat(5000)}`;
    const res = await send({ message: { text } });
    expect(res.statusCode).toBe(200);
    expect(
      vb
        .callsOf('send_message')
        .map((c) => c.body.text)
        .join(''),
    ).toBe(text);
    expect(res.json()).toHaveLength(2);
    expect(
      (await outgoing())
        .slice(-2)
        .map((m) => m.text)
        .join(''),
    ).toBe(text);
  });

  it('answers 422 with the reason when Viber refuses, storing nothing', async () => {
    vb.answerNext('send_message', { status: 6, status_message: 'receiverNotSubscribed' });
    const before = (await outgoing()).length;
    const res = await send({ message: { text: 'hello?' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('receiverNotSubscribed');
    expect(await outgoing()).toHaveLength(before);
  });

  it('retries once after tooManyRequests; a second refusal answers 429 with Retry-After', async () => {
    const waits: number[] = [];
    h.services.bots.wait = async (ms) => {
      waits.push(ms);
    };
    vb.answerNext('send_message', { status: 12, status_message: 'tooManyRequests' });
    expect((await send({ message: { text: 'after the limit' } })).statusCode).toBe(200);
    expect(waits).toEqual([1000]);
    expect(vb.callsOf('send_message')).toHaveLength(2);

    vb.answerNext('send_message', { status: 12, status_message: 'tooManyRequests' });
    vb.answerNext('send_message', { status: 12, status_message: 'tooManyRequests' });
    const before = (await outgoing()).length;
    const res = await send({ message: { text: 'still limited' } });
    expect(res.statusCode).toBe(429);
    expect(res.json().code).toBe('rate_limited');
    expect(res.headers['retry-after']).toBe('1');
    expect(await outgoing()).toHaveLength(before);
  });

  it('flips the integration to "auth failure" when the token was revoked', async () => {
    vb.accounts.delete(bot.token);
    const res = await send({ message: { text: 'anyone?' } });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('invalidAuthToken');
    const list = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.json().find((i: { id: number }) => i.id === bot.integration.id).status).toBe('auth failure');
  });
});
