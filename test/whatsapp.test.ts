import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph, waWebhook } from './helpers/fake-meta-graph.js';
import { postForm, sample } from './helpers/multipart.js';
import { createIntegration, createManager } from './helpers/fixtures.js';

const PUBLIC = 'https://parley.example.com';
const DAY = 24 * 60 * 60 * 1000;

let graph: FakeMetaGraph;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  h = await createHarness({
    env: { PARLEY_META_GRAPH_URL: graph.url, PARLEY_PUBLIC_URL: PUBLIC, PARLEY_SEND_TIMEOUT_MS: '1000', PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' },
  });
});
afterAll(async () => {
  await h?.close();
  await graph?.close();
});
beforeEach(() => {
  graph.calls.length = 0;
});

const db = () => h.database.db.kysely;
type Connected = { token: string; appSecret: string; phoneNumberId: string; wabaId: string; integration: Record<string, any> };

async function connect(owner: SignedUp): Promise<Connected> {
  const n = ++seq;
  const number = {
    token: `EAAG-system-user-${n}`,
    phoneNumberId: `10${n}6543210987`,
    wabaId: `20${n}1234567890`,
    display: `+1 555-078-${1000 + n}`,
    name: `Shop ${n}`,
  };
  graph.addNumber(number);
  const appSecret = `app-secret-${n}`;
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: {
      type: 'msgra_business_api',
      credentials: { accessToken: number.token, phoneNumberId: number.phoneNumberId, appSecret, wabaId: number.wabaId },
    },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { token: number.token, appSecret, phoneNumberId: number.phoneNumberId, wabaId: number.wabaId, integration: res.json() };
}

function post(c: Connected, body: string, signature: string | undefined) {
  return h.request({
    method: 'POST',
    url: `/channels/meta/${c.integration.id}`,
    headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'x-hub-signature-256': signature }) },
    payload: body,
  });
}
const signed = (c: Connected, body: object | string) => {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return post(c, raw, FakeMetaGraph.sign(c.appSecret, raw));
};

let wamid = 0;
const ts = () => String(Math.floor(h.clock.now() / 1000));
/** A customer's message as Meta delivers it; the fake opens the customer's window as Meta would. */
function inbound(c: Connected, waId: string, message: Record<string, unknown>, name = 'Ada Lovelace') {
  graph.openWindow(c.phoneNumberId, waId);
  return waWebhook(c.phoneNumberId, {
    contacts: [{ profile: { name }, wa_id: waId }],
    messages: [{ from: waId, id: `wamid.IN${++wamid}`, timestamp: ts(), ...message }],
  });
}
const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();

describe('connecting a WhatsApp Cloud API number', () => {
  it('reads the number with the token and answers the webhook to paste (owner only)', async () => {
    const owner = await h.signUp();
    const c = await connect(owner);
    expect(c.integration).toMatchObject({
      status: 'active',
      login: `+1 555-078-${1000 + seq}`,
      externalId: c.phoneNumberId,
      identifier: c.wabaId,
      url: `https://wa.me/1555078${1000 + seq}`,
    });
    expect(c.integration.webhook.url).toBe(`${PUBLIC}/channels/meta/${c.integration.id}`);
    expect(c.integration.webhook.verifyToken).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const [call] = graph.callsOf('GET', new RegExp(`^${c.phoneNumberId}$`));
    expect(call!.token).toBe(c.token);
    const list = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.json()[0].webhook).toEqual(c.integration.webhook);
    expect((await h.request({ method: 'GET', url: '/v1.2/integrations', token: owner.access })).json()[0].webhook).toBeUndefined();
    const manager = await createManager(h, owner, { sources: [c.integration.id] });
    const seen = await h.request({ method: 'GET', url: '/v1.3/integrations', token: manager.access });
    expect(seen.json()[0].id).toBe(c.integration.id);
    expect(seen.json()[0].webhook).toBeUndefined();
  });

  it('keeps a token Meta refuses (code 190) with status "auth failure"; other refusals are 400, nothing kept', async () => {
    const owner = await h.signUp();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgra_business_api', credentials: { accessToken: 'bad', phoneNumberId: '123', appSecret: 's', wabaId: '456' } },
    });
    expect(res.json().status).toBe('auth failure');
    // Never accepted by Meta: no ids to build Graph paths of, a clear refusal instead.
    const never = await h.request({ method: 'GET', url: `/v1.3/integrations/${res.json().id}/templates`, token: owner.access });
    expect(never.statusCode).toBe(422);
    expect(never.json().error).toContain('never connected');
    const c = await connect(owner);
    const wrong = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgra_business_api', credentials: { accessToken: c.token, phoneNumberId: '999', appSecret: 's', wabaId: '456' } },
    });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().error).toContain('does not exist');
    const path = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgra_business_api', credentials: { accessToken: c.token, phoneNumberId: '../me', appSecret: 's', wabaId: '456' } },
    });
    expect(path.statusCode).toBe(400);
    const missing = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgra_business_api', credentials: { accessToken: c.token } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toContain('phoneNumberId');
    const rows = await db().selectFrom('integrations').select('status').where('account_id', '=', owner.accountId).execute();
    expect(rows.map((r) => r.status).sort()).toEqual(['active', 'auth failure']);
  });

  it('answers the hub.* handshake with the challenge; a wrong verify token is 403', async () => {
    const owner = await h.signUp();
    const c = await connect(owner);
    const q = (token: string, mode = 'subscribe') =>
      `/channels/meta/${c.integration.id}?hub.mode=${mode}&hub.verify_token=${encodeURIComponent(token)}&hub.challenge=1158201444`;
    const ok = await h.request({ method: 'GET', url: q(c.integration.webhook.verifyToken) });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    expect(ok.body).toBe('1158201444');
    expect((await h.request({ method: 'GET', url: q('guess') })).statusCode).toBe(403);
    expect((await h.request({ method: 'GET', url: q(c.integration.webhook.verifyToken, 'unsubscribe') })).statusCode).toBe(403);
    expect(
      (await h.request({ method: 'GET', url: `/channels/meta/999999?hub.mode=subscribe&hub.verify_token=x&hub.challenge=1` })).statusCode,
    ).toBe(404);
  });
});

describe('WhatsApp webhooks', () => {
  let owner: SignedUp;
  let c: Connected;
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
  });

  it('stores a signed text once (Meta redelivers), naming the customer from contacts and opening the 24-hour window', async () => {
    const body = inbound(c, '4915112345678', { type: 'text', text: { body: 'Hello shop' } });
    const first = await signed(c, body);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ ok: true, stored: 1, duplicates: 0 });
    expect((await signed(c, body)).json()).toMatchObject({ stored: 0, duplicates: 1 });
    const stored = await messagesOf(c.integration.id);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ text: 'Hello shop', incoming: 1, external_id: `wamid.IN${wamid}`, created_at: Number(ts()) * 1000 });
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: '4915112345678', name: 'Ada Lovelace', login: '4915112345678' });
    const customer = await db().selectFrom('customers').selectAll().where('id', '=', profile.customer_id).executeTakeFirstOrThrow();
    expect(customer.name).toBe('Ada Lovelace');
    const sources = await h.request({ method: 'GET', url: `/v1.3/messaging/${stored[0]!.lead_id}/sources`, token: owner.access });
    expect(sources.json()[0]).toMatchObject({
      id: '4915112345678',
      type: 'message',
      identifier: c.wabaId,
      expires: new Date(Number(ts()) * 1000 + DAY).toISOString(),
    });
  });

  it('answers 401 to a missing or wrong signature and 400 to malformed bodies, storing nothing', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const raw = JSON.stringify(inbound(c, '4915100000001', { type: 'text', text: { body: 'forged' } }));
    expect((await post(c, raw, undefined)).statusCode).toBe(401);
    expect((await post(c, raw, FakeMetaGraph.sign('other-secret', raw))).statusCode).toBe(401);
    expect((await post(c, `${raw} `, FakeMetaGraph.sign(c.appSecret, raw))).statusCode).toBe(401);
    // 401 comes before 400: an unsigned malformed body is refused for its signature.
    expect((await post(c, '{oops', undefined)).statusCode).toBe(401);
    for (const bad of [
      '{oops',
      '[]',
      '{"object":"whatsapp_business_account"}',
      '{"object":"page","entry":[]}',
      '{"object":"whatsapp_business_account","entry":[{"changes":[{"field":"messages"}]}]}',
    ]) {
      const res = await signed(c, bad);
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    // One malformed message refuses the whole delivery before the good one is stored.
    const mixed = waWebhook(c.phoneNumberId, {
      messages: [
        { from: '4915100000002', id: 'wamid.ok', timestamp: ts(), type: 'text', text: { body: 'fine' } },
        { from: '4915100000002', type: 'text' },
      ],
    });
    expect((await signed(c, mixed)).statusCode).toBe(400);
    const nul = inbound(c, '4915100000003', { type: 'image', image: { id: 'abc\u0000' } });
    expect((await signed(c, nul)).statusCode).toBe(400);
    const nulText = inbound(c, '4915100000003', { type: 'text', text: { body: 'a\u0000b' } });
    expect((await signed(c, nulText)).statusCode).toBe(400);
    const huge = inbound(c, '4915100000003', { type: 'text', text: { body: 'x' }, timestamp: '1'.repeat(40) });
    expect((await signed(c, huge)).statusCode).toBe(400);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });

  it('acknowledges unsupported kinds, other fields and unknown phone numbers, storing nothing and saying why', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const unsupported = inbound(c, '4915100000004', { type: 'unsupported', errors: [{ code: 131051, title: 'Message type unknown' }] });
    const res = await signed(c, unsupported);
    expect(res.statusCode).toBe(200);
    expect(res.json().ignored).toEqual([expect.stringContaining('kind unsupported is not supported')]);
    const other = waWebhook('777000111222', {
      messages: [{ from: '4915100000005', id: 'wamid.other', timestamp: ts(), type: 'text', text: { body: 'x' } }],
    });
    expect((await signed(c, other)).json().ignored).toEqual([expect.stringContaining('phone number id 777000111222 is not connected')]);
    const field = {
      object: 'whatsapp_business_account',
      entry: [{ id: c.wabaId, changes: [{ field: 'message_template_status_update', value: { event: 'APPROVED' } }] }],
    };
    expect((await signed(c, field)).json().ignored).toEqual(['field message_template_status_update']);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
    expect((await post({ ...c, integration: { id: 987654 } }, '{}', FakeMetaGraph.sign(c.appSecret, '{}'))).statusCode).toBe(404);
  });

  it("routes changes of another number of the same Meta app to that number's integration", async () => {
    const second = await connect(owner);
    const sameApp = { ...second, appSecret: c.appSecret };
    const body = waWebhook(second.phoneNumberId, {
      messages: [{ from: '4915100000020', id: 'wamid.second', timestamp: ts(), type: 'text', text: { body: 'to the second number' } }],
    });
    // Its own app secret differs from the first integration's: not the same Meta app, left aside.
    expect((await signed(c, body)).json()).toMatchObject({
      stored: 0,
      ignored: [expect.stringContaining(`phone number id ${second.phoneNumberId}`)],
    });
    expect(await messagesOf(second.integration.id)).toHaveLength(0);
    // Connected again with the first one's app secret (one app, two numbers): routed there.
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: {
        type: 'msgra_business_api',
        credentials: {
          accessToken: second.token,
          phoneNumberId: second.phoneNumberId,
          appSecret: sameApp.appSecret,
          wabaId: second.wabaId,
        },
      },
    });
    expect((await signed(c, body)).json()).toMatchObject({ stored: 1 });
    expect(await messagesOf(res.json().id)).toHaveLength(1);
    expect(await messagesOf(c.integration.id)).not.toContainEqual(expect.objectContaining({ external_id: 'wamid.second' }));
  });

  it('downloads media with the token into Parley storage before answering, and maps every other kind', async () => {
    const wa = '4915100000010';
    const jpeg = Buffer.from(sample('jpeg'));
    const pdf = Buffer.from(sample('pdf'));
    const image = graph.addInboundMedia(c.token, jpeg, 'image/jpeg');
    const doc = graph.addInboundMedia(c.token, pdf, 'application/pdf');
    const audio = graph.addInboundMedia(c.token, Buffer.from('OggS-voice'), 'audio/ogg');
    const kinds: Array<Record<string, unknown>> = [
      { type: 'image', image: { id: image, mime_type: 'image/jpeg', sha256: 'x', caption: 'our shelf' } },
      { type: 'document', document: { id: doc, mime_type: 'application/pdf', sha256: 'x', filename: 'invoice.pdf' } },
      { type: 'audio', audio: { id: audio, mime_type: 'audio/ogg; codecs=opus', voice: true } },
      { type: 'location', location: { latitude: 52.52, longitude: 13.405, name: 'Shop', address: 'Main St 1' } },
      {
        type: 'contacts',
        contacts: [{ name: { formatted_name: 'Bob Builder' }, phones: [{ phone: '+49 30 123456', wa_id: '4930123456' }] }],
      },
      { type: 'button', button: { text: 'Yes please', payload: 'YES' } },
      { type: 'interactive', interactive: { type: 'list_reply', list_reply: { id: 'size-m', title: 'Size M', description: 'Fits most' } } },
      {
        type: 'text',
        text: { body: 'from an ad' },
        referral: {
          source_url: 'https://fb.me/ad1',
          source_type: 'ad',
          source_id: '1',
          headline: 'Sale',
          body: 'All -20%',
          media_type: 'image',
          image_url: 'https://scontent.example/ad.jpg',
        },
      },
    ];
    for (const m of kinds) expect((await signed(c, inbound(c, wa, m))).json().stored).toBe(1);
    const stored = (await messagesOf(c.integration.id)).slice(-kinds.length);
    const att = (i: number) => JSON.parse(stored[i]!.attachments)[0] as { type: string; url: string; text: string };
    expect([0, 1, 2, 3].map((i) => att(i).type)).toEqual(['photo', 'doc', 'audio', 'link']);
    for (const [i, bytes] of [
      [0, jpeg],
      [1, pdf],
    ] as const) {
      expect(att(i).url).toMatch(new RegExp(`^${PUBLIC}/files/`));
      const got = await h.request({ method: 'GET', url: att(i).url.slice(PUBLIC.length) });
      expect(Buffer.from(got.rawPayload)).toEqual(bytes);
    }
    expect(graph.callsOf('GET', new RegExp(`^${image}$`))[0]!.token).toBe(c.token);
    expect(stored[0]!.text).toBe('our shelf');
    expect(att(1).text).toBe('invoice.pdf');
    expect(att(3)).toMatchObject({ text: 'Shop, Main St 1' });
    expect(att(3).url).toContain('mlat=52.52');
    expect(stored.slice(4, 7).map((m) => m.text)).toEqual(['Contact: Bob Builder, +49 30 123456', 'Yes please', 'Size M\nFits most']);
    expect(JSON.parse(stored[7]!.preview!)).toEqual({
      photo: 'https://scontent.example/ad.jpg',
      description: 'All -20%',
      owner: 'ad',
      url: 'https://fb.me/ad1',
    });
  });

  it('answers 502 when Meta fails while a media file is fetched, so that Meta redelivers; nothing stored', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const image = graph.addInboundMedia(c.token, Buffer.from(sample('jpeg')), 'image/jpeg');
    graph.failNext(new RegExp(`^${image}$`), {
      status: 500,
      error: { message: 'An unknown error occurred', type: 'OAuthException', code: 1 },
    });
    const body = inbound(c, '4915100000011', { type: 'image', image: { id: image, mime_type: 'image/jpeg' } });
    expect((await signed(c, body)).statusCode).toBe(502);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
    expect((await signed(c, body)).json().stored).toBe(1);
  });

  it('links replies (context) and reactions to the quoted message', async () => {
    const wa = '4915100000012';
    const first = inbound(c, wa, { type: 'text', text: { body: 'first' } });
    await signed(c, first);
    const quotedId = (first.entry as any)[0].changes[0].value.messages[0].id as string;
    await signed(c, inbound(c, wa, { type: 'text', text: { body: 'about that' }, context: { from: wa, id: quotedId } }));
    await signed(c, inbound(c, wa, { type: 'reaction', reaction: { message_id: quotedId, emoji: '👍' } }));
    const removed = await signed(c, inbound(c, wa, { type: 'reaction', reaction: { message_id: quotedId } }));
    expect(removed.json().ignored).toEqual([expect.stringContaining('reaction was removed')]);
    const rows = (await messagesOf(c.integration.id)).slice(-3);
    expect(rows.map((r) => r.text)).toEqual(['first', 'about that', '👍']);
    for (const r of rows.slice(1)) expect(JSON.parse(r.reply_to!)).toMatchObject({ messageId: rows[0]!.id, message: { text: 'first' } });
  });
});

describe('sending through WhatsApp', () => {
  let owner: SignedUp;
  let c: Connected;
  const wa = '4917700000001';
  let leadId: number;
  let incomingId: number;
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
    await signed(c, inbound(c, wa, { type: 'text', text: { body: 'Do you ship to Berlin?' } }));
    const [row] = await messagesOf(c.integration.id);
    leadId = row!.lead_id;
    incomingId = row!.id;
  });
  const send = (payload: object) => h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });
  const outgoing = async () => (await messagesOf(c.integration.id)).filter((m) => !m.incoming);
  const sent = () => graph.callsOf('POST', /\/messages$/);

  it('sends text with context and biz_opaque_callback_data, stores the wamid', async () => {
    const res = await send({ message: { text: 'Yes, next day' }, replyId: incomingId, customId: 'crm-42' });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = sent();
    expect(call!.token).toBe(c.token);
    expect(call!.path).toBe(`${c.phoneNumberId}/messages`);
    expect(call!.body).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: wa,
      type: 'text',
      text: { body: 'Yes, next day', preview_url: false },
      context: { message_id: `wamid.IN${wamid}` },
      biz_opaque_callback_data: 'crm-42',
    });
    const [row] = (await outgoing()).slice(-1);
    expect(row!.external_id).toMatch(/^wamid\./);
    expect(res.json()[0]).toMatchObject({ messageId: String(row!.id), incoming: false, replyTo: { messageId: incomingId } });
  });

  it('splits a text longer than 4096 characters', async () => {
    const text = `${'a'.repeat(4000)} ${'b'.repeat(500)}`;
    const res = await send({ message: { text } });
    expect(res.json()).toHaveLength(2);
    expect(sent().map((s) => s.body.text.body.length)).toEqual([4001, 500]);
  });

  it('uploads a file to /{phoneNumberId}/media and sends it by id with the text as caption', async () => {
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('pdf'), type: 'application/pdf', filename: 'price-list.pdf' }],
    ]);
    expect(up.statusCode, up.body).toBe(200);
    const res = await send({ message: { text: 'Our prices', attachment: up.json() } });
    expect(res.statusCode, res.body).toBe(200);
    const [upload] = graph.callsOf('POST', /\/media$/);
    expect(upload!.body).toMatchObject({
      messaging_product: 'whatsapp',
      type: 'application/pdf',
      file: { filename: 'price-list.pdf', mime: 'application/pdf' },
    });
    expect(Buffer.from(upload!.body.file.bytes)).toEqual(Buffer.from(sample('pdf')));
    const [call] = sent();
    const mediaId = [...graph.media.entries()].find(([, f]) => f.filename === 'price-list.pdf')![0];
    expect(call!.body).toMatchObject({ type: 'document', document: { id: mediaId, caption: 'Our prices', filename: 'price-list.pdf' } });
  });

  it('sends form B as type template: component_values become components, policy deterministic, namespace not sent', async () => {
    graph.templates.set(c.wabaId, [
      {
        name: 'order_update',
        language: 'en_US',
        category: 'UTILITY',
        status: 'APPROVED',
        components: [{ type: 'BODY', text: 'Order {{1}} ships {{2}}' }],
      },
    ]);
    const components = [
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'A-17' },
          { type: 'text', text: 'today' },
        ],
      },
      { type: 'button', sub_type: 'quick_reply', index: '0', parameters: [{ type: 'payload', payload: 'TRACK' }] },
    ];
    const res = await send({
      template: { namespace: 'b4c5-ns', name: 'order_update', language: { code: 'en_US' }, component_values: components },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(sent()[0]!.body).toMatchObject({
      type: 'template',
      template: { name: 'order_update', language: { policy: 'deterministic', code: 'en_US' }, components },
    });
    expect(sent()[0]!.body.template.namespace).toBeUndefined();
    expect(res.json()[0].message.text).toBe('[template order_update]');
  });

  it("answers 422 with Meta's reason for an unknown template, storing nothing", async () => {
    const before = (await outgoing()).length;
    const res = await send({ template: { namespace: 'ns', name: 'no_such', language: { code: 'en_US' } } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ code: 'channel_rejected' });
    expect(res.json().error).toContain('Template name does not exist in the translation');
    expect(res.json().error).toContain('no_such');
    expect(await outgoing()).toHaveLength(before);
  });

  it('maps Meta refusals: 131047 -> 422 with its text, 130429/131056 -> 429 with Retry-After, 5xx -> 502, timeout -> 504; 190 -> auth failure', async () => {
    const before = (await outgoing()).length;
    graph.closeWindow(c.phoneNumberId, wa);
    const window = await send({ message: { text: 'late' } });
    expect(window.statusCode).toBe(422);
    expect(window.json().error).toContain('Re-engagement message');
    graph.openWindow(c.phoneNumberId, wa);
    graph.failNext(/\/messages$/, { status: 400, error: { message: '(#130429) Rate limit hit', type: 'OAuthException', code: 130429 } });
    const limited = await send({ message: { text: 'x' } });
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    graph.failNext(/\/messages$/, {
      status: 400,
      error: { message: '(#131056) pair rate limit', type: 'OAuthException', code: 131056 },
      retryAfter: 7,
    });
    const pair = await send({ message: { text: 'x' } });
    expect([pair.statusCode, pair.headers['retry-after']]).toEqual([429, '7']);
    graph.failNext(/\/messages$/, { status: 503, error: { message: 'Service unavailable', type: 'OAuthException', code: 2 } });
    expect((await send({ message: { text: 'x' } })).statusCode).toBe(502);
    graph.failNext(/\/messages$/, 'hang');
    expect((await send({ message: { text: 'x' } })).statusCode).toBe(504);
    expect(await outgoing()).toHaveLength(before);
    graph.failNext(/\/messages$/, {
      status: 401,
      error: { message: 'Error validating access token: Session has expired', type: 'OAuthException', code: 190, error_subcode: 463 },
    });
    const expired = await send({ message: { text: 'x' } });
    expect(expired.statusCode).toBe(422);
    const row = await db().selectFrom('integrations').select('status').where('id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('auth failure');
    await db().updateTable('integrations').set({ status: 'active' }).where('id', '=', c.integration.id).execute();
  });

  it('refuses free-form messages after the 24-hour window without calling Meta; templates still go', async () => {
    const before = (await outgoing()).length;
    // The customer's last message is more than 24 hours old (the source's `expires` has passed).
    await db()
      .updateTable('sources')
      .set({ expires_at: h.clock.now() - 1000 })
      .where('integration_id', '=', c.integration.id)
      .execute();
    const res = await send({ message: { text: 'are you there?' } });
    expect(res.statusCode).toBe(422);
    expect(res.json()).toEqual({ error: 'outside the 24-hour window: send a template', code: 'channel_rejected' });
    expect(sent()).toHaveLength(0);
    expect(await outgoing()).toHaveLength(before);
    const tpl = await send({ template: { namespace: 'ns', name: 'order_update', language: { code: 'en_US' } } });
    expect(tpl.statusCode, tpl.body).toBe(200);
    // A new customer message opens the window again.
    await signed(c, inbound(c, wa, { type: 'text', text: { body: 'yes' } }));
    expect((await send({ message: { text: 'great' } })).statusCode).toBe(200);
  });

  it('lists approved templates to the owner and employees with access (GET /v1.3/integrations/<id>/templates)', async () => {
    graph.templates.set(c.wabaId, [
      ...Array.from({ length: 120 }, (_, i) => ({
        name: `promo_${i}`,
        language: 'en_US',
        category: 'MARKETING',
        status: 'APPROVED',
        components: [],
      })),
      { name: 'pending_one', language: 'de', category: 'UTILITY', status: 'PENDING', components: [] },
    ]);
    const res = await h.request({ method: 'GET', url: `/v1.3/integrations/${c.integration.id}/templates`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toHaveLength(120);
    expect(res.json()[0]).toEqual({ name: 'promo_0', language: 'en_US', category: 'MARKETING', status: 'APPROVED', components: [] });
    expect(graph.callsOf('GET', /message_templates$/).map((call) => call.query.get('after'))).toEqual([null, '100']);
    const doc = (await h.request({ method: 'GET', url: '/docs/openapi.json' })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(doc.paths['/v1.3/integrations/{id}/templates']?.get).toBeDefined();
    expect(Object.keys(doc.paths['/channels/meta/{integrationId}'] ?? {}).sort()).toEqual(['get', 'post']);
    const outsider = await createManager(h, owner, { sources: [await createIntegration(h, owner.accountId)] });
    const insider = await createManager(h, owner, { sources: [c.integration.id] });
    expect(
      (await h.request({ method: 'GET', url: `/v1.3/integrations/${c.integration.id}/templates`, token: insider.access })).statusCode,
    ).toBe(200);
    expect(
      (await h.request({ method: 'GET', url: `/v1.3/integrations/${c.integration.id}/templates`, token: outsider.access })).statusCode,
    ).toBe(404);
    const other = await h.signUp();
    expect(
      (await h.request({ method: 'GET', url: `/v1.3/integrations/${c.integration.id}/templates`, token: other.access })).statusCode,
    ).toBe(404);
  });
});

describe('WhatsApp delivery statuses', () => {
  let owner: SignedUp;
  let c: Connected;
  const wa = '4917700000099';
  let leadId: number;
  let realId: number;
  beforeAll(async () => {
    owner = await h.signUp();
    c = await connect(owner);
    await signed(c, inbound(c, wa, { type: 'text', text: { body: 'hi' } }));
    const [row] = await messagesOf(c.integration.id);
    leadId = row!.lead_id;
    realId = row!.source_id;
  });
  const send = async (text: string) => {
    const res = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${leadId}/send`,
      token: owner.access,
      payload: { message: { text } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const row = await db().selectFrom('messages').selectAll().where('id', '=', Number(res.json()[0].messageId)).executeTakeFirstOrThrow();
    return row;
  };
  const status = (id: string, s: string, extra: Record<string, unknown> = {}) =>
    waWebhook(c.phoneNumberId, { statuses: [{ id, status: s, timestamp: ts(), recipient_id: wa, ...extra }] });
  const history = async (version: string) =>
    (await h.request({ method: 'POST', url: `/${version}/messaging/${leadId}/history/${realId}`, token: owner.access, payload: {} })).json()
      .messages as Array<Record<string, any>>;

  it('moves forward only, whatever the order and repeats; shown on v1.3 history only', async () => {
    const hookAll = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks/',
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/all' },
    });
    const hookStatus = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks/',
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/status', events: ['message.status'] },
    });
    expect([hookAll.statusCode, hookStatus.statusCode]).toEqual([200, 200]);
    const m = await send('on its way');
    for (const s of ['delivered', 'sent', 'delivered', 'read', 'read', 'delivered', 'failed']) {
      expect((await signed(c, status(m.external_id!, s))).statusCode).toBe(200);
    }
    const row = await db()
      .selectFrom('messages')
      .select(['delivery_status', 'delivery_error'])
      .where('id', '=', m.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ delivery_status: 'read', delivery_error: null });
    const v13 = (await history('v1.3')).find((x) => x.messageId === String(m.id))!;
    expect(v13.status).toBe('read');
    expect(v13.error).toBeUndefined();
    const v12 = (await history('v1.2')).find((x) => x.messageId === String(m.id))!;
    expect(v12.status).toBeUndefined();
    const incoming = (await history('v1.3')).find((x) => x.incoming)!;
    expect(incoming.status).toBeUndefined();

    // Two moves (delivered, read): two events; only the webhook naming message.status gets them.
    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'message.status')
      .orderBy('id')
      .execute();
    expect(events.map((e) => JSON.parse(e.payload).status)).toEqual(['delivered', 'read']);
    expect(JSON.parse(events[1]!.payload)).toMatchObject({
      type: 'message.status',
      accountId: owner.accountId,
      leadId,
      messageId: String(m.id),
      message: { messageId: String(m.id), status: 'read' },
    });
    const deliveries = await db()
      .selectFrom('deliveries')
      .select(['webhook_id', 'event_id'])
      .where(
        'event_id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    expect(deliveries.map((d) => d.webhook_id)).toEqual([hookStatus.json().id, hookStatus.json().id]);
  });

  it("stores a failure with Meta's reason, shown as error on v1.3", async () => {
    const m = await send('will fail');
    const errors = [
      {
        code: 131026,
        title: 'Message undeliverable',
        message: 'Message undeliverable',
        error_data: { details: 'Receiver is incapable of receiving this message' },
      },
    ];
    await signed(c, status(m.external_id!, 'failed', { errors }));
    await signed(c, status(m.external_id!, 'sent'));
    const v13 = (await history('v1.3')).find((x) => x.messageId === String(m.id))!;
    expect(v13.status).toBe('failed');
    expect(v13.error).toEqual({ code: 131026, title: 'Message undeliverable', message: 'Receiver is incapable of receiving this message' });
  });

  it('holds a status that comes before its message is stored, and applies it when the message is', async () => {
    graph.nextWamid = 'wamid.early1';
    const early = await signed(c, status('wamid.early1', 'delivered'));
    expect(early.json()).toMatchObject({ statuses: 0 });
    const m = await send('fast answer');
    expect(m.external_id).toBe('wamid.early1');
    expect(m.delivery_status).toBe('delivered');
    const events = await db()
      .selectFrom('events')
      .select(['type', 'payload'])
      .where('account_id', '=', owner.accountId)
      .orderBy('id', 'desc')
      .limit(2)
      .execute();
    expect(events.map((e) => e.type)).toEqual(['message.status', 'message.outgoing']);
    expect(JSON.parse(events[1]!.payload).message.status).toBe('delivered');
    expect(await db().selectFrom('held_delivery_statuses').selectAll().where('external_id', '=', 'wamid.early1').execute()).toEqual([]);
    // Later reports keep moving it forward.
    await signed(c, status('wamid.early1', 'read'));
    expect((await history('v1.3')).find((x) => x.messageId === String(m.id))!.status).toBe('read');
  });

  it('acknowledges statuses of unknown message ids and unknown status values without storing', async () => {
    const res = await signed(
      c,
      waWebhook(c.phoneNumberId, {
        statuses: [
          { id: 'wamid.unknown', status: 'read', timestamp: ts(), recipient_id: wa },
          { id: 'wamid.x', status: 'deleted', timestamp: ts() },
        ],
      }),
    );
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ statuses: 0, ignored: ['status deleted of wamid.x'] });
  });
});
