import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph } from './helpers/fake-meta-graph.js';
import { FakeMetaPages } from './helpers/fake-meta-pages.js';
import { FakeMetaComments, feedWebhook } from './helpers/fake-meta-comments.js';
import { postForm, sample } from './helpers/multipart.js';
import { createManager } from './helpers/fixtures.js';

/** Facebook Page comments (`social1_group`) and private replies into Messenger (`social1_messenger`). */

const PUBLIC = 'https://parley.example.com';
const DAY = 24 * 60 * 60 * 1000;

let graph: FakeMetaGraph;
let pages: FakeMetaPages;
let comments: FakeMetaComments;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  h = await createHarness({ env: { PARLEY_META_GRAPH_URL: graph.url, PARLEY_PUBLIC_URL: PUBLIC, PARLEY_SEND_TIMEOUT_MS: '1000' } });
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
type Page = { id: string; token: string; appSecret: string };
type Connected = Page & { integration: Record<string, any> };

function newPage(): Page {
  const n = ++seq;
  const page = {
    id: `20${n}5566778899`,
    token: `EAAGroup-${n}`,
    name: `Cafe ${n}`,
    picture: `https://cdn.example/c${n}.jpg`,
    kind: 'page' as const,
  };
  pages.addPage(page);
  return { id: page.id, token: page.token, appSecret: `group-app-secret-${n}` };
}

async function connect(owner: SignedUp, page: Page, type: 'social1_group' | 'social1_messenger' = 'social1_group'): Promise<Connected> {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type, credentials: { pageAccessToken: page.token, pageId: page.id, appSecret: page.appSecret } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { ...page, integration: res.json() };
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

let commentSeq = 0;
/** A customer's comment on a post of the page: known to the fake (for private replies) and as the feed webhook. */
function comment(
  c: Connected,
  postId: string,
  author: { id: string; name: string; psid: string },
  text: string,
  at = h.clock.now(),
  parentId?: string,
) {
  const commentId = `${postId.split('_')[1]}_${++commentSeq}`;
  comments.addComment({ id: commentId, ownerId: c.id, authorId: author.id, dmId: author.psid, at });
  const value = {
    from: { id: author.id, name: author.name },
    post: { status_type: 'added_photos', is_published: true, permalink_url: `https://www.facebook.com/${postId}`, id: postId },
    message: text,
    post_id: postId,
    comment_id: commentId,
    created_time: Math.floor(at / 1000),
    item: 'comment',
    parent_id: parentId ?? postId,
    verb: 'add',
  };
  return { commentId, body: feedWebhook(c.id, value, at) };
}

function post(c: Connected, text: string): string {
  const id = `${c.id}_${++commentSeq}00`;
  comments.addObject({
    id,
    ownerId: c.id,
    fields: {
      message: text,
      full_picture: `https://scontent.example/${id}.jpg`,
      permalink_url: `https://www.facebook.com/cafe/posts/${id}`,
      from: { name: 'Cafe page', id: c.id },
    },
  });
  return id;
}

const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();

describe('connecting a Page for its comments (social1_group)', () => {
  it('checks the Page like Messenger, subscribes the feed field and keeps the Page id as identifier', async () => {
    const owner = await h.signUp();
    const page = newPage();
    const c = await connect(owner, page);
    expect(c.integration).toMatchObject({ type: 'social1_group', status: 'active', externalId: page.id, identifier: page.id });
    expect(c.integration.webhook).toEqual({ url: `${PUBLIC}/channels/meta/${c.integration.id}`, verifyToken: expect.any(String) });
    expect(graph.callsOf('GET', new RegExp(`^${page.id}$`))[0]!.query.get('fields')).toBe('name,picture');
    const fields = String(graph.callsOf('POST', new RegExp(`^${page.id}/subscribed_apps$`))[0]!.body.subscribed_fields).split(',');
    expect(fields).toContain('feed');
    // The app's one subscription also serves a Messenger integration of the same Page: its fields stay.
    expect(fields).toContain('messages');
    const missing = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'social1_group', credentials: { pageAccessToken: page.token } },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toContain('pageId');
  });

  it('answers the hub.* handshake with the verify token', async () => {
    const owner = await h.signUp();
    const c = await connect(owner, newPage());
    const ok = await h.request({
      method: 'GET',
      url: `/channels/meta/${c.integration.id}?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(c.integration.webhook.verifyToken)}&hub.challenge=42abc`,
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toBe('42abc');
  });

  it('answers uploads with the social1_* media object (mime, name, path)', async () => {
    const owner = await h.signUp();
    const c = await connect(owner, newPage());
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'cake.png' }],
    ]);
    expect(up.statusCode, up.body).toBe(200);
    expect(Object.keys(up.json().media).sort()).toEqual(['mime', 'name', 'path']);
  });
});

describe('Page comments', () => {
  let owner: SignedUp;
  let c: Connected;
  let messenger: Connected;
  let postId: string;
  const ann = { id: '6101', name: 'Ann Lee', psid: '7101' };
  const send = (leadId: number, payload: object) =>
    h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload });

  beforeAll(async () => {
    owner = await h.signUp();
    const page = newPage();
    c = await connect(owner, page);
    messenger = await connect(owner, page, 'social1_messenger');
    postId = post(c, 'Our new cherry cake is here! Come and taste it this weekend, only at the corner cafe on Elm street. '.repeat(2));
  });

  it('refuses a wrong signature (401) before reading the body, then a malformed body (400), storing nothing', async () => {
    const { body } = comment(c, postId, ann, 'never stored');
    expect((await signed(c, body, 'sha256=0000')).statusCode).toBe(401);
    expect((await signed(c, '{not json', 'sha256=0000')).statusCode).toBe(401);
    expect((await signed(c, '{not json')).statusCode).toBe(400);
    expect(await messagesOf(c.integration.id)).toHaveLength(0);
  });

  it('stores a comment once on a comment channel per post and author, with the post read as preview', async () => {
    const { commentId, body } = comment(c, postId, ann, 'Is it gluten free?');
    const first = await signed(c, body);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toMatchObject({ stored: 1, duplicates: 0 });
    expect(graph.callsOf('GET', new RegExp(`^${postId}$`))).toHaveLength(1);
    expect(graph.callsOf('GET', new RegExp(`^${postId}$`))[0]!.query.get('fields')).toContain('full_picture');
    // Meta delivers again: stored once, and the post is not read again.
    expect((await signed(c, body)).json()).toMatchObject({ stored: 0, duplicates: 1 });
    expect(graph.callsOf('GET', new RegExp(`^${postId}$`))).toHaveLength(1);
    const [stored] = await messagesOf(c.integration.id);
    expect(stored).toMatchObject({ external_id: commentId, text: 'Is it gluten free?', incoming: 1 });
    const sources = await h.request({ method: 'GET', url: `/v1.3/messaging/${stored!.lead_id}/sources`, token: owner.access });
    expect(sources.json()).toEqual([
      expect.objectContaining({
        id: `${postId}:${ann.id}`,
        type: 'comment',
        name: expect.stringMatching(/^Our new cherry cake is here!/),
        identifier: c.id,
        saId: c.integration.id,
      }),
    ]);
    expect(sources.json()[0].name.length).toBeLessThanOrEqual(100);
    const history = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${stored!.lead_id}/history/${sources.json()[0].realId}`,
      token: owner.access,
      payload: {},
    });
    expect(history.json().messages[0].preview).toEqual({
      photo: `https://scontent.example/${postId}.jpg`,
      description: expect.stringMatching(/^Our new cherry cake/),
      owner: 'Cafe page',
      url: `https://www.facebook.com/cafe/posts/${postId}`,
    });
    expect(history.json().messages[0].sender).toMatchObject({ socialId: ann.id, login: '' });
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', c.integration.id).executeTakeFirstOrThrow();
    expect(profile.name).toBe('Ann Lee');
  });

  it("reflects an edit and a removal of a comment, and leaves the page's own comments aside", async () => {
    const { commentId, body } = comment(c, postId, ann, 'Typo here');
    await signed(c, body);
    const change = (verb: string, extra: object = {}) =>
      feedWebhook(c.id, {
        from: { id: ann.id, name: ann.name },
        post_id: postId,
        comment_id: commentId,
        created_time: Math.floor(h.clock.now() / 1000),
        item: 'comment',
        verb,
        ...extra,
      });
    expect((await signed(c, change('edited', { message: 'No typo here' }))).json()).toMatchObject({ stored: 1 });
    const text = async () =>
      (await db().selectFrom('messages').select('text').where('external_id', '=', commentId).executeTakeFirstOrThrow()).text;
    expect(await text()).toBe('No typo here');
    expect((await signed(c, change('remove'))).json()).toMatchObject({ stored: 1 });
    expect(await text()).toBe('This comment was removed by its author or the page.');
    const before = (await messagesOf(c.integration.id)).length;
    const own = comment(c, postId, { id: c.id, name: 'Cafe', psid: '0' }, 'Thanks everyone!');
    const res = await signed(c, own.body);
    expect(res.json().ignored.join()).toContain('written by the account itself');
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });

  it('answers on the comment channel with a public reply under the latest comment', async () => {
    const { commentId, body } = comment(c, postId, ann, 'And the price?');
    await signed(c, body);
    const leadId = (await messagesOf(c.integration.id))[0]!.lead_id;
    const res = await send(leadId, { message: { text: '4 euros a slice' }, source: `${postId}:${ann.id}` });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${commentId}/comments$`));
    expect(call!.body).toEqual({ message: '4 euros a slice' });
    expect(call!.token).toBe(c.token);
    expect(res.json()[0]).toMatchObject({ incoming: false, message: { text: '4 euros a slice' }, source: { type: 'comment' } });
    expect(res.json()[0].replyTo).toMatchObject({ message: { text: 'And the price?' } });
  });

  it('answers privately in the Messenger lead of the same Page, linking the two profiles in one customer; once per comment', async () => {
    const { commentId, body } = comment(c, postId, ann, 'Can you send me the recipe?');
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.external_id === commentId)!;
    const res = await send(stored.lead_id, {
      message: { text: 'Sent you a message!' },
      source: `${postId}:${ann.id}`,
      replyId: stored.id,
      private: true,
    });
    expect(res.statusCode, res.body).toBe(200);
    const [call] = graph.callsOf('POST', new RegExp(`^${c.id}/messages$`));
    expect(call!.body).toEqual({ recipient: { comment_id: commentId }, message: { text: 'Sent you a message!', metadata: 'parley' } });
    expect(call!.token).toBe(c.token);
    expect(res.json()[0]).toMatchObject({
      incoming: false,
      sa: { id: messenger.integration.id, type: 'social1_messenger' },
      source: { id: ann.psid, type: 'message' },
    });
    // The reply is in the Messenger integration's lead of the customer, not in the comment lead.
    const [dm] = await messagesOf(messenger.integration.id);
    expect(dm).toMatchObject({ text: 'Sent you a message!', incoming: 0 });
    const dmLead = await db().selectFrom('leads').selectAll().where('id', '=', dm!.lead_id).executeTakeFirstOrThrow();
    expect(dmLead.integration_id).toBe(messenger.integration.id);
    const commentProfile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', c.integration.id)
      .where('social_id', '=', ann.id)
      .executeTakeFirstOrThrow();
    const dmProfile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', messenger.integration.id)
      .where('social_id', '=', ann.psid)
      .executeTakeFirstOrThrow();
    expect(dmProfile.customer_id).toBe(commentProfile.customer_id);
    const customer = await h.request({ method: 'GET', url: `/v1.3/customers/${commentProfile.customer_id}`, token: owner.access });
    expect(
      customer
        .json()
        .profiles.map((p: { socialId: string }) => p.socialId)
        .sort(),
    ).toEqual([ann.id, ann.psid].sort());
    // A second private reply to the same comment: refused without asking Meta.
    graph.calls.length = 0;
    const again = await send(stored.lead_id, {
      message: { text: 'And again' },
      replyId: stored.id,
      source: `${postId}:${ann.id}`,
      private: true,
    });
    expect(again.statusCode).toBe(422);
    expect(again.json().error).toContain('answered privately already');
    expect(graph.callsOf('POST', /messages$/)).toHaveLength(0);
    expect(await messagesOf(messenger.integration.id)).toHaveLength(1);
  });

  it('joins a Messenger customer known before to the comment author (one customer)', async () => {
    const bob = { id: '6202', name: 'Bob Ray', psid: '7202' };
    pages.addUser({ id: bob.psid, firstName: 'Bob', lastName: 'Ray', pic: 'https://cdn.example/bob.jpg' });
    pages.customerWrote(c.id, bob.psid, h.clock.now());
    const dm = {
      object: 'page',
      entry: [
        {
          id: c.id,
          time: h.clock.now(),
          messaging: [
            { sender: { id: bob.psid }, recipient: { id: c.id }, timestamp: h.clock.now(), message: { mid: 'm_bob1', text: 'Hi' } },
          ],
        },
      ],
    };
    expect((await signed(messenger, dm)).json()).toMatchObject({ stored: 1 });
    const { commentId, body } = comment(c, postId, bob, 'Open on Sunday?');
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.external_id === commentId)!;
    expect(
      (await send(stored.lead_id, { message: { text: 'Yes, 9 to 5' }, source: `${postId}:${bob.id}`, private: true })).statusCode,
    ).toBe(200);
    const profiles = await db()
      .selectFrom('profiles')
      .select(['customer_id', 'social_id'])
      .where('social_id', 'in', [bob.id, bob.psid])
      .execute();
    expect(profiles).toHaveLength(2);
    expect(new Set(profiles.map((p) => p.customer_id)).size).toBe(1);
    const bobDm = await messagesOf(messenger.integration.id).then((rows) =>
      rows.filter((m) => m.text === 'Hi' || m.text === 'Yes, 9 to 5'),
    );
    expect(new Set(bobDm.map((m) => m.lead_id)).size).toBe(1);
  });

  it("takes the Page's comments at the Messenger address and its messages at the comments address (one callback URL per Meta app)", async () => {
    const fay = { id: '6505', name: 'Fay', psid: '7505' };
    const { commentId, body } = comment(c, postId, fay, 'Seen at the Messenger URL');
    expect((await signed(messenger, body)).json()).toMatchObject({ stored: 1 });
    expect((await messagesOf(c.integration.id)).some((m) => m.external_id === commentId)).toBe(true);
    pages.addUser({ id: fay.psid, firstName: 'Fay', lastName: 'Dunn', pic: 'https://cdn.example/fay.jpg' });
    const dm = {
      object: 'page',
      entry: [
        {
          id: c.id,
          time: h.clock.now(),
          messaging: [
            {
              sender: { id: fay.psid },
              recipient: { id: c.id },
              timestamp: h.clock.now(),
              message: { mid: 'm_fay1', text: 'Seen at the comments URL' },
            },
          ],
        },
      ],
    };
    expect((await signed(c, dm)).json()).toMatchObject({ stored: 1 });
    expect((await messagesOf(messenger.integration.id)).some((m) => m.external_id === 'm_fay1')).toBe(true);
    // A malformed comment in a delivery refuses the whole delivery: its message is not stored either.
    const mixed = {
      object: 'page',
      entry: [
        {
          id: c.id,
          time: h.clock.now(),
          messaging: [
            { sender: { id: fay.psid }, recipient: { id: c.id }, timestamp: h.clock.now(), message: { mid: 'm_fay2', text: 'x' } },
          ],
        },
        { id: c.id, time: h.clock.now(), changes: [{ field: 'feed', value: { item: 'comment', verb: 'add', comment_id: 'bad id' } }] },
      ],
    };
    expect((await signed(messenger, mixed)).statusCode).toBe(400);
    expect((await messagesOf(messenger.integration.id)).some((m) => m.external_id === 'm_fay2')).toBe(false);
  });

  it('lets only employees who may use the Messenger integration answer privately; v1.2 drops `private` (a public reply)', async () => {
    const gus = { id: '6606', name: 'Gus', psid: '7606' };
    const { commentId, body } = comment(c, postId, gus, 'Delivery to my street?');
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.external_id === commentId)!;
    const manager = await createManager(h, owner, { sources: [c.integration.id], allowAllDeals: true });
    graph.calls.length = 0;
    const denied = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${stored.lead_id}/send`,
      token: manager.access,
      payload: { message: { text: 'psst' }, source: `${postId}:${gus.id}`, private: true },
    });
    expect(denied.statusCode, denied.body).toBe(403);
    expect(graph.calls).toHaveLength(0);
    const old = await h.request({
      method: 'POST',
      url: `/v1.2/messaging/${stored.lead_id}/send`,
      token: owner.access,
      payload: { message: { text: 'Yes we deliver' }, source: `${postId}:${gus.id}`, private: true },
    });
    expect(old.statusCode, old.body).toBe(200);
    expect(graph.calls.map((x) => x.path)).toEqual([`${commentId}/comments`]);
    expect(graph.callsOf('POST', /messages$/)).toHaveLength(0);
    // The comment was answered publicly only: a private reply may still follow.
    expect(
      (await send(stored.lead_id, { message: { text: 'Details in Messenger' }, source: `${postId}:${gus.id}`, private: true })).statusCode,
    ).toBe(200);
  });

  it('refuses a private reply 7 days after the comment, with the reason, without asking Meta', async () => {
    const old = h.clock.now() - 7 * DAY - 60_000;
    const carl = { id: '6303', name: 'Carl', psid: '7303' };
    const { body } = comment(c, postId, carl, 'Old question', old);
    await signed(c, body);
    const stored = (await messagesOf(c.integration.id)).find((m) => m.text === 'Old question')!;
    graph.calls.length = 0;
    const res = await send(stored.lead_id, { message: { text: 'Too late?' }, source: `${postId}:${carl.id}`, private: true });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('within 7 days');
    expect(graph.calls).toHaveLength(0);
  });

  it('refuses private replies on other integrations and attachments in them (400)', async () => {
    const leadId = (await messagesOf(c.integration.id))[0]!.lead_id;
    const up = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(c.integration.id)],
      ['media', { data: sample('png'), type: 'image/png', filename: 'x.png' }],
    ]);
    const withFile = await send(leadId, { message: { text: 'x', attachment: up.json() }, source: `${postId}:${ann.id}`, private: true });
    expect(withFile.statusCode).toBe(400);
    const dmLead = (await messagesOf(messenger.integration.id))[0]!.lead_id;
    const onDm = await send(dmLead, { message: { text: 'x' }, private: true });
    expect(onDm.statusCode).toBe(400);
  });

  it('refuses malformed feed events whole (400, nothing stored) and never answers 500', async () => {
    const before = (await messagesOf(c.integration.id)).length;
    const base = {
      from: { id: ann.id, name: 'A' },
      post_id: postId,
      comment_id: `${postId.split('_')[1]}_999`,
      created_time: Math.floor(h.clock.now() / 1000),
      item: 'comment',
      verb: 'add',
      message: 'x',
    };
    const bad = [
      feedWebhook(c.id, { ...base, comment_id: undefined }),
      feedWebhook(c.id, { ...base, comment_id: '../../me' }),
      feedWebhook(c.id, { ...base, created_time: 1e300 }),
      feedWebhook(c.id, { ...base, from: 'ann' }),
      feedWebhook(c.id, { ...base, message: { text: 'x' } }),
      feedWebhook(c.id, { ...base, item: undefined }),
      { object: 'page', entry: [{ id: c.id, changes: 'feed' }] },
      { object: 'page', entry: [{ id: c.id, changes: [{ field: 'feed' }] }] },
      { object: 'instagram', entry: [] },
    ];
    for (const body of bad) {
      const res = await signed(c, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    const nul = JSON.stringify(feedWebhook(c.id, base)).replace('"x"', '"a\\u0000b"');
    expect((await signed(c, nul)).statusCode).toBe(400);
    expect(await messagesOf(c.integration.id)).toHaveLength(before);
  });
});

describe('private replies without a Messenger integration', () => {
  it('refuses with the reason when no social1_messenger integration shares the Page id', async () => {
    const owner = await h.signUp();
    const c = await connect(owner, newPage());
    const postId = post(c, 'Lonely post');
    const dan = { id: '6404', name: 'Dan', psid: '7404' };
    const { body } = comment(c, postId, dan, 'Hello?');
    await signed(c, body);
    const [stored] = await messagesOf(c.integration.id);
    graph.calls.length = 0;
    const res = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${stored!.lead_id}/send`,
      token: owner.access,
      payload: { message: { text: 'psst' }, private: true, source: `${postId}:${dan.id}` },
    });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toContain('No active social1_messenger integration');
    expect(graph.calls).toHaveLength(0);
  });
});
