import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead } from './helpers/fixtures.js';
import { DIALECT } from './helpers/database.js';
import { API_VERSIONS } from '../src/api/versions.js';
import type { IntegrationRow, SourceRow } from '../src/db/schema.js';

let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  const id = await createIntegration(h, owner.accountId, 'msgrb_bot');
  await h.database.db.kysely.updateTable('integrations').set({ identifier: 'acct-77' }).where('id', '=', id).execute();
  integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
let seq = 0;

interface Thread {
  leadId: number;
  source: SourceRow;
  socialId: string;
}

/** A customer thread on `chat` (a new customer unless `socialId` names one). */
async function incoming(socialId: string, chat: string, text = 'hi'): Promise<{ leadId: number; messageId: number }> {
  seq += 1;
  h.clock.advance(1000);
  return h.services.ingest.ingest(integration, {
    externalId: `h-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: `Customer ${socialId}`, avatar: `https://cdn.example/${socialId}.png` },
    channel: { externalId: chat, type: 'message' },
    text,
  });
}

async function thread(): Promise<Thread> {
  const socialId = `s-${++seq}`;
  const first = await incoming(socialId, `chat-${socialId}`, 'first');
  const source = await db().selectFrom('sources').selectAll().where('external_id', '=', `chat-${socialId}`).executeTakeFirstOrThrow();
  return { leadId: first.leadId, source, socialId };
}

async function outgoing(t: Thread, text: string) {
  const lead = await db().selectFrom('leads').selectAll().where('id', '=', t.leadId).executeTakeFirstOrThrow();
  h.clock.advance(1000);
  await db()
    .transaction()
    .execute((trx) =>
      h.services.ingest.recordOutgoing(trx, { integration, source: t.source, lead, userId: owner.userId }, [
        { externalId: `o-${++seq}`, text, attachments: [], replyTo: undefined, customId: `cid-${seq}`, at: h.clock.now() },
      ]),
    );
}

const history = (leadId: number, realId: number, payload?: object, version = 'v1.3', token: string | undefined = owner.access) =>
  h.request({
    method: 'POST',
    url: `/${version}/messaging/${leadId}/history/${realId}`,
    token,
    ...(payload === undefined ? {} : { payload }),
  });

/** Every page from the newest on: the ids in order and the page sizes. */
async function pageThrough(leadId: number, realId: number) {
  const ids: number[] = [];
  const sizes: number[] = [];
  let cursor: number | undefined;
  for (let guard = 0; guard < 20; guard++) {
    const res = await history(leadId, realId, cursor === undefined ? undefined : { cursor });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json() as { cursor: number; source: number; messages: Array<{ messageId: string }> };
    expect(body.source).toBe(realId);
    ids.push(...body.messages.map((m) => Number(m.messageId)));
    sizes.push(body.messages.length);
    if (body.cursor === -1) return { ids, sizes };
    cursor = body.cursor;
  }
  throw new Error('history never ended');
}

describe('POST /messaging/<leadId>/history/<realId>', () => {
  it('pages through any history newest first, 50 at a time, with no gap or repeat (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 180 }),
        fc.array(fc.boolean(), { minLength: 180, maxLength: 180 }),
        async (count, kinds) => {
          const t = await thread();
          // The thread's first message is part of the history; `count` more follow, incoming or
          // outgoing, and the same customer writes meanwhile on another channel of the same lead.
          for (let i = 0; i < count; i++) {
            if (kinds[i]) await incoming(t.socialId, t.source.external_id, `m${i}`);
            else await outgoing(t, `a${i}`);
            if (i % 40 === 0) await incoming(t.socialId, `other-${t.socialId}`, 'elsewhere');
          }
          const expected = (
            await db()
              .selectFrom('messages')
              .select('id')
              .where('lead_id', '=', t.leadId)
              .where('source_id', '=', t.source.id)
              .orderBy('id', 'desc')
              .execute()
          ).map((r) => r.id);
          expect(expected).toHaveLength(count + 1);
          const { ids, sizes } = await pageThrough(t.leadId, t.source.id);
          expect(ids).toEqual(expected);
          expect(sizes.slice(0, -1).every((n) => n === 50)).toBe(true);
          expect(sizes.at(-1)).toBe((count + 1) % 50 === 0 ? 50 : (count + 1) % 50);
        },
      ),
      {
        numRuns: 8,
        examples: [
          [0, Array(180).fill(true)],
          [49, Array(180).fill(false)],
          [99, Array(180).fill(true)],
          [180, Array(180).fill(true)],
        ],
      },
    );
  });

  it('answers an empty page with cursor -1 for a channel without messages', async () => {
    const lead = await createLead(h, owner.accountId, integration.id);
    expect((await history(lead.leadId, lead.sourceId)).json()).toEqual({ cursor: -1, source: lead.sourceId, messages: [] });
  });

  it('accepts no body, an empty JSON body with its Content-Type, {} and {cursor: null}', async () => {
    const t = await thread();
    const requests = [
      h.request({ method: 'POST', url: `/v1.3/messaging/${t.leadId}/history/${t.source.id}`, token: owner.access }),
      h.request({
        method: 'POST',
        url: `/v1.3/messaging/${t.leadId}/history/${t.source.id}`,
        token: owner.access,
        headers: { 'content-type': 'application/json' },
        body: '',
      }),
      history(t.leadId, t.source.id, {}),
      history(t.leadId, t.source.id, { cursor: null }),
      history(t.leadId, t.source.id, {}, 'v1.1'),
    ];
    for (const res of await Promise.all(requests)) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ cursor: -1, source: t.source.id, messages: [{ message: { text: 'first' } }] });
    }
  });

  it('refuses a cursor that was never issued for this lead and source (400)', async () => {
    const t = await thread();
    for (let i = 0; i < 55; i++) await incoming(t.socialId, t.source.external_id);
    const first = (await history(t.leadId, t.source.id)).json();
    expect(first.cursor).toBeGreaterThan(0);
    expect((await history(t.leadId, t.source.id, { cursor: String(first.cursor) })).json().messages).toHaveLength(6);

    const other = await thread();
    const elsewhere = await incoming(t.socialId, `side-${t.socialId}`);
    const foreign = (await db().selectFrom('messages').select('id').where('lead_id', '=', other.leadId).executeTakeFirstOrThrow()).id;
    for (const cursor of [0, foreign, elsewhere.messageId, 2 ** 40, '123456789']) {
      for (const v of API_VERSIONS) {
        const res = await history(t.leadId, t.source.id, { cursor }, v);
        expect(res.statusCode, `${v} cursor ${cursor}: ${res.body}`).toBe(400);
      }
    }
    for (const cursor of [-2, 'abc', 1.5, true]) {
      expect((await history(t.leadId, t.source.id, { cursor })).statusCode, `cursor ${cursor}`).toBe(400);
    }
    // -1 (the end) asked again is the end again.
    expect((await history(t.leadId, t.source.id, { cursor: -1 })).json()).toEqual({ cursor: -1, source: t.source.id, messages: [] });
  });

  it('answers 404 for a realId that is not a channel of the lead; v1.3 400 and v1.1/v1.2 404 for non-integer ids', async () => {
    const t = await thread();
    const other = await thread();
    expect((await history(t.leadId, other.source.id)).statusCode).toBe(404);
    expect((await history(t.leadId, 99_999_999)).statusCode).toBe(404);
    expect((await history(99_999_999, t.source.id)).statusCode).toBe(404);
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'POST', url: `/${v}/messaging/${t.leadId}/history/abc`, token: owner.access });
      expect(res.statusCode).toBe(v === 'v1.3' ? 400 : 404);
    }
  });

  it('shapes History messages: customer sender for incoming, employee for outgoing, no customId, identifier from v1.2', async () => {
    const t = await thread();
    await outgoing(t, 'our answer');
    const profile = await db().selectFrom('profiles').selectAll().where('social_id', '=', t.socialId).executeTakeFirstOrThrow();
    for (const v of API_VERSIONS) {
      const body = (await history(t.leadId, t.source.id, undefined, v)).json();
      const [answer, question] = body.messages;
      expect(question).toEqual({
        messageId: expect.any(String),
        datetime: expect.any(Number),
        sa: { id: integration.id, type: 'msgrb_bot', login: integration.login, avatar: '' },
        incoming: true,
        message: { text: 'first', url: '', attachments: [] },
        sender: {
          id: profile.id,
          customerId: profile.customer_id,
          login: profile.login,
          avatar: profile.avatar,
          type: 'msgrb_bot',
          socialId: t.socialId,
          profileUrl: '',
        },
        source: {
          id: t.source.external_id,
          realId: t.source.id,
          name: null,
          type: 'message',
          saId: integration.id,
          sender: t.socialId,
          token: null,
          expires: null,
          ...(v === 'v1.1' ? {} : { identifier: 'acct-77' }),
        },
        replyTo: null,
        preview: null,
      });
      expect(answer).toMatchObject({
        incoming: false,
        message: { text: 'our answer' },
      });
      // The test integration's externalId is not an integer: the outgoing sender has no `id`.
      expect(answer.sender).toEqual({ userId: owner.userId });
      expect(answer).not.toHaveProperty('customId');
      expect(answer.datetime).toBeGreaterThan(question.datetime);
    }
  });
});

describe('history queries', () => {
  it('reads a page with a fixed number of queries, whatever its size and cursor (profiles in one query)', async () => {
    const original = h.database.db.kysely;
    let queries = 0;
    // Counted as they run (results), so that queries compiled once (db/prepared.ts) count too.
    const counting = original.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        queries++;
        return args.result;
      },
    });
    const small = await thread();
    const large = await thread();
    // The large page mixes incoming messages and answers: a lookup per message would show here.
    for (let i = 0; i < 60; i++) {
      if (i % 3) await incoming(large.socialId, large.source.external_id, `m${i}`);
      else await outgoing(large, `a${i}`);
    }
    const count = async (t: Thread, cursor?: number) => {
      queries = 0;
      h.database.db.kysely = counting;
      try {
        const res = await history(t.leadId, t.source.id, cursor === undefined ? undefined : { cursor });
        expect(res.statusCode).toBe(200);
        return { queries, body: res.json() };
      } finally {
        h.database.db.kysely = original;
      }
    };
    const one = await count(small);
    const fifty = await count(large);
    expect(fifty.body.messages).toHaveLength(50);
    expect(fifty.queries).toBe(one.queries);
    const next = await count(large, fifty.body.cursor);
    expect(next.body.messages).toHaveLength(11);
    // The cursor is checked in the query that finds the lead and its channel.
    expect(next.queries).toBe(one.queries);
    // The caller's user, the lead with its integration and channel, the page, the senders' profiles
    // (PostgreSQL, where each query is a round trip: one statement reads the lead, its channel and
    // the page with its senders' profiles, and the caller's row is kept in memory after its first
    // request, test/user-cache.test.ts).
    expect(one.queries).toBe(DIALECT === 'postgres' ? 1 : 4);
  });
});

describe('GET /messaging/<leadId>/sources', () => {
  it("lists the lead's channels with identifier from v1.2 and expires as ISO", async () => {
    const t = await thread();
    await incoming(t.socialId, `second-${t.socialId}`);
    const expiresAt = Date.UTC(2026, 2, 5, 10, 0, 0);
    await db().updateTable('sources').set({ expires_at: expiresAt, name: 'Photo 1', token: 'tok' }).where('id', '=', t.source.id).execute();
    const other = await thread();
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'GET', url: `/${v}/messaging/${t.leadId}/sources`, token: owner.access });
      expect(res.statusCode, res.body).toBe(200);
      const list = res.json();
      expect(list.map((s: { id: string }) => s.id)).toEqual([t.source.external_id, `second-${t.socialId}`]);
      expect(list[0]).toEqual({
        id: t.source.external_id,
        realId: t.source.id,
        name: 'Photo 1',
        type: 'message',
        saId: integration.id,
        sender: t.socialId,
        token: 'tok',
        expires: '2026-03-05T10:00:00.000Z',
        ...(v === 'v1.1' ? {} : { identifier: 'acct-77' }),
      });
      expect(list.some((s: { realId: number }) => s.realId === other.source.id)).toBe(false);
    }
    expect((await h.request({ method: 'GET', url: '/v1.3/messaging/99999999/sources', token: owner.access })).statusCode).toBe(404);
  });
});
