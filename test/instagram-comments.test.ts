import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph } from './helpers/fake-meta-graph.js';
import { FakeMetaPages } from './helpers/fake-meta-pages.js';
import { FakeMetaComments, instagramCommentWebhook } from './helpers/fake-meta-comments.js';
import { postForm, sample } from './helpers/multipart.js';

/** Instagram comments (`photonetVOff`) and private replies into Instagram direct messages (`photonetV3`). */

const PUBLIC = 'https://parley.example.com';
const DAY = 24 * 60 * 60 * 1000;

let graph: FakeMetaGraph;
let pages: FakeMetaPages;
let comments: FakeMetaComments;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  h = await createHarness({
    env: {
      PARLEY_INSTAGRAM_GRAPH_URL: graph.url,
      PARLEY_META_GRAPH_URL: 'http://127.0.0.1:9',
      PARLEY_PUBLIC_URL: PUBLIC,
      PARLEY_SEND_TIMEOUT_MS: '1000',
    },
  });
  pages = new FakeMetaPages(graph, () => h.clock.now());
  comments = new FakeMetaComments(graph, pages, () => h.clock.now());
});
afterAll(async () => {
  await h?.close();
  await graph?.close();
});
beforeEach(() => {
  graph.calls.length = 0;
});

const db = () => h.database.db.kysely;
type Account = { id: string; token: string; appSecret: string };
type Connected = Account & { integration: Record<string, any> };

function newAccount(): Account {
  const n = ++seq;
  const account = {
    id: `1784150${n}5550000`,
    token: `IGQVJ-c${n}`,
    name: `pottery.studio.${n}`,
    picture: `https://cdn.example/ig${n}.jpg`,
    kind: 'instagram' as const,
  };
  pages.addPage(account);
  return { id: account.id, token: account.token, appSecret: `ig-comments-secret-${n}` };
}

async function connect(owner: SignedUp, account: Account, type: 'photonetVOff' | 'photonetV3' = 'photonetVOff'): Promise<Connected> {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type, credentials: { accessToken: account.token, appSecret: account.appSecret } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { ...account, integration: res.json() };
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

let n = 0;
function media(c: Connected, type: 'IMAGE' | 'VIDEO', caption: string): string {
  const id = String(18_000_000_000 + ++n);
  comments.addObject({
    id,
    ownerId: c.id,
    fields: {
      caption,
      media_type: type,
      media_url: `https://scontent.cdninstagram.example/${id}.${type === 'VIDEO' ? 'mp4' : 'jpg'}`,
      ...(type === 'VIDEO' ? { thumbnail_url: `https://scontent.cdninstagram.example/${id}-thumb.jpg` } : {}),
      permalink: `https://www.instagram.com/p/${id}/`,
      username: 'pottery.studio',
    },
  });
  return id;
}

function comment(
  c: Connected,
  mediaId: string,
  author: { id: string; username: string },
  text: string,
  at = h.clock.now(),
  field = 'comments',
) {
  const commentId = String(17_800_000_000 + ++n);
  comments.addComment({ id: commentId, ownerId: c.id, authorId: author.id, dmId: author.id, at });
  const value = {
    from: { id: author.id, username: author.username },
    media: { id: mediaId, media_product_type: 'FEED' },
    id: commentId,
    text,
  };
  return { commentId, body: instagramCommentWebhook(c.id, value, Math.floor(at / 1000), field) };
}

const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();

describe('Instagram comments (photonetVOff)', () => {
  let owner: SignedUp;
  let c: Connected;
  let dm: Connected;
  const eva = { id: '9501', username: 'eva.clay' };
  const send = (leadId: number, payload: object) =>
    h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });

  beforeAll(async () => {
    owner = await h.signUp();
    const account = newAccount();
    dm = await connect(owner, account, 'photonetV3');
    c = await connect(owner, account);
  });

  it('connects like photonetV3 on the Instagram host, subscribed to comments and live_comments', async () => {
    expect(c.integration).toMatchObject({ type: 'photonetVOff', status: 'active', externalId: c.id, identifier: c.id });
    expect(c.integration.webhook.url).toBe(`${PUBLIC}/channels/meta/${c.integration.id}`);
    const fresh = await connect(owner, newAccount());
    expect(graph.callsOf('GET', /^me$/)[0]!.query.get('fields')).toBe('user_id,username,profile_picture_url');
    const fields = String(graph.callsOf('POST', new RegExp(`^${fresh.id}/subscribed_apps$`))[0]!.body.subscribed_fields).split(',');
    expect(fields).toEqual(expect.arrayContaining(['comments', 'live_comments', 'messages']));
  });

  it('answers uploads with the photo network media object (mime, name, url, type, size)', async () => {
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'vase.png' }],
    ]);
    expect(up.statusCode, up.body).toBe(200);
    expect(Object.keys(up.json().media).sort()).toEqual(['mime', 'name', 'size', 'type', 'url']);
  });

  it('stores a comment once on a photo or video channel per media and author, with the media read as preview', async () => {
    const photo = media(c, 'IMAGE', 'Fresh from the kiln: blue glazed bowls');
    const { commentId, body } = comment(c, photo, eva, 'How much is the big one?');
    expect((await signed(c, body, 'sha256=bad')).statusCode).toBe(401);
    const first = await signed(c, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ stored: 1 });
    expect((await signed(c, body)).json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect(graph.callsOf('GET', new RegExp(`^${photo}$`))).toHaveLength(1);
    const [stored] = await messagesOf(c.integration.id);
    expect(stored).toMatchObject({ external_id: commentId, text: 'How much is the big one?' });
    const sources = await h.request({ method: 'GET', url: `/v1.3/messaging/${stored!.lead_id}/sources`, token: owner.access });
    expect(sources.json()).toEqual([
      expect.objectContaining({
        id: `${photo}:${eva.id}`,
        type: 'photo',
        name: 'Fresh from the kiln: blue glazed bowls',
        identifier: c.id,
      }),
    ]);
    expect(JSON.parse(stored!.preview!)).toEqual({
      photo: `https://scontent.cdninstagram.example/${photo}.jpg`,
      description: 'Fresh from the kiln: blue glazed bowls',
      owner: 'pottery.studio',
      url: `https://www.instagram.com/p/${photo}/`,
    });
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: eva.id, login: 'eva.clay', profile_url: 'https://www.instagram.com/eva.clay' });

    const video = media(c, 'VIDEO', 'Throwing a vase');
    await signed(c, comment(c, video, eva, 'Wow', h.clock.now(), 'live_comments').body);
    const videoSource = await db()
      .selectFrom('sources')
      .selectAll()
      .where('external_id', '=', `${video}:${eva.id}`)
      .executeTakeFirstOrThrow();
    expect(videoSource.type).toBe('video');
  });

  it("answers publicly with POST /{comment-id}/replies and leaves the account's own comments aside", async () => {
    const photo = media(c, 'IMAGE', 'Mugs');
    const { commentId, body } = comment(c, photo, eva, 'Dishwasher safe?');
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.external_id === commentId)!;
    const res = await send(stored.lead_id, { message: { text: 'Yes!' }, source: `${photo}:${eva.id}` });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${commentId}/replies$`));
    expect(call!.body).toEqual({ message: 'Yes!' });
    expect(call!.token).toBe(c.token);
    const own = await signed(c, comment(c, photo, { id: c.id, username: 'pottery.studio' }, 'Thanks!').body);
    expect(own.json().ignored.join()).toContain('written by the account itself');
  });

  it('answers privately into the photonetV3 lead of the same account, once per comment and within 7 days', async () => {
    const photo = media(c, 'IMAGE', 'Plates');
    const { commentId, body } = comment(c, photo, eva, 'DM me the price please');
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.external_id === commentId)!;
    const res = await send(stored.lead_id, { message: { text: 'Sent!' }, source: `${photo}:${eva.id}`, private: true });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${c.id}/messages$`));
    expect(call!.body.recipient).toEqual({ comment_id: commentId });
    expect(res.json()[0]).toMatchObject({ sa: { id: dm.integration.id, type: 'photonetV3' }, source: { id: eva.id, type: 'message' } });
    const [reply] = await messagesOf(dm.integration.id);
    expect(reply).toMatchObject({ text: 'Sent!', incoming: 0 });
    const both = await db().selectFrom('profiles').select('customer_id').where('social_id', '=', eva.id).execute();
    expect(both).toHaveLength(2);
    expect(both[0]!.customer_id).toBe(both[1]!.customer_id);
    graph.calls.length = 0;
    const again = await send(stored.lead_id, {
      message: { text: 'Again' },
      source: `${photo}:${eva.id}`,
      replyId: stored.id,
      private: true,
    });
    expect(again.statusCode).toBe(422);
    expect(graph.calls).toHaveLength(0);

    const old = comment(c, photo, { id: '9502', username: 'old.timer' }, 'Old', h.clock.now() - 8 * DAY);
    await signed(c, old.body);
    const oldRow = (await messagesOf(c.integration.id)).find((m) => m.external_id === old.commentId)!;
    const late = await send(oldRow.lead_id, { message: { text: 'Late' }, source: `${photo}:9502`, private: true });
    expect(late.statusCode).toBe(422);
    expect(late.json().error).toContain('within 7 days');
    expect(graph.callsOf('POST', /messages$/)).toHaveLength(0);
  });

  it('refuses malformed comment events whole (400, nothing stored)', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const value = {
      from: { id: eva.id, username: eva.username },
      media: { id: '18000000999', media_product_type: 'FEED' },
      id: '17899999999',
      text: 'x',
    };
    const bad = [
      instagramCommentWebhook(c.id, { ...value, id: undefined }, 1),
      instagramCommentWebhook(c.id, { ...value, media: undefined }, 1),
      instagramCommentWebhook(c.id, { ...value, from: { id: 'me/messages' } }, 1),
      instagramCommentWebhook(c.id, { ...value, text: 12 }, 1),
      { object: 'instagram', entry: [{ id: c.id, time: 'now', changes: [{ field: 'comments', value }] }] },
      { object: 'page', entry: [] },
    ];
    for (const body of bad) expect((await signed(c, body)).statusCode, JSON.stringify(body)).toBe(400);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });
});

describe('Instagram private replies without photonetV3', () => {
  it('refuses with the reason when no photonetV3 integration shares the account id', async () => {
    const owner = await h.signUp();
    const c = await connect(owner, newAccount());
    const photo = media(c, 'IMAGE', 'Alone');
    await signed(c, comment(c, photo, { id: '9601', username: 'x' }, 'Hi').body);
    const [stored] = await messagesOf(c.integration.id);
    const res = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${stored?.lead_id}/send`,
      token: owner.access,
      payload: { message: { text: 'psst' }, private: true, source: `${photo}:9601` },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('No active photonetV3 integration');
  });
});
