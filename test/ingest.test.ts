import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { sql } from 'kysely';
import { createHarness, type Harness } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import type { IntegrationRow, StatusType } from '../src/db/schema.js';
import { afterIncoming, afterOutgoing } from '../src/domain/conversations/lead-lifecycle.js';
import { INGEST_LANE_LOCK, IngestService } from '../src/domain/conversations/ingest.service.js';
import type { OutgoingRecord } from '../src/domain/conversations/conversations.types.js';
import type { HistoryMessage } from '../src/domain/conversations/history-message.js';
import { storeSendsAtOnce, type OutgoingUnit } from '../src/domain/conversations/outgoing-batch.js';
import { DIALECT } from './helpers/database.js';
import { keyedTransaction, openDatabase, schemaLockKey } from '../src/db/database.js';
import { statementCounter, transactionWatch } from './helpers/statements.js';
import { insertInboxLead, lockConversations } from '../src/domain/conversations/conversations.repo.js';

let h: Harness;
beforeAll(async () => {
  // The file signs up more accounts (one per test or so) than one address may in a window.
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100' } });
});
afterAll(() => h.close());

let seq = 0;
function incoming(socialId: string, over: Partial<IncomingMessage> = {}): IncomingMessage {
  seq += 1;
  return {
    externalId: `m-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: `Customer ${socialId}`, login: `login_${socialId}` },
    channel: { externalId: `chat-${socialId}`, type: 'message' },
    text: `hello ${seq}`,
    ...over,
  };
}

/** PostgreSQL: the first key of the ingest lanes' advisory lock, in this test's schema. */
const laneKey = schemaLockKey(INGEST_LANE_LOCK);

async function setup(type = 'widget'): Promise<{ integration: IntegrationRow; accountId: number }> {
  const owner = await h.signUp();
  const id = await createIntegration(h, owner.accountId, type);
  const integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return { integration, accountId: owner.accountId };
}

/** An outgoing message a channel accepted at `at`, with the text `text of <externalId>`. */
function record(externalId: string | null, at: number, over: Partial<OutgoingRecord> = {}): OutgoingRecord {
  return { externalId, text: `text of ${externalId}`, attachments: [], replyTo: undefined, customId: null, at, ...over };
}

/**
 * Three sends to the conversations `a` and `b` (whose leads' last messages are older than t0 + 5 s
 * and newer than t0 - 0.5 s), with the customIds `keys`: three messages to `a` (a text with
 * quotes, braces, a backslash and an emoji; an attachment; one older than the lead's last message),
 * one to `b`, then a second send to `a` of two messages, one without a provider id.
 */
function threeSends(
  a: Omit<OutgoingUnit, 'records'>,
  b: Omit<OutgoingUnit, 'records'>,
  t0: number,
  keys: [string, string],
): OutgoingUnit[] {
  const [first, second] = keys;
  return [
    {
      ...a,
      customId: first,
      records: [
        record('out-1', t0 + 5_000, { text: 'part one with "quotes" {braces}, \\ and 😀', customId: first }),
        record('out-2', t0 + 5_000, {
          text: '',
          url: 'https://example.com/f.pdf',
          attachments: [{ type: 'doc' as const, url: 'https://example.com/f.pdf', text: 'f.pdf' }],
          customId: first,
        }),
        // Older than the lead's last message: stored, but the last message stays.
        record('out-3', t0 - 500),
      ],
    },
    { ...b, customId: second, records: [record('out-4', t0 + 6_000, { customId: second })] },
    // A second send to the first lead in the same batch: it follows the first.
    { ...a, records: [record('out-5', t0 + 7_000), record(null, t0 + 7_000)] },
  ];
}

async function statusOf(accountId: number, type: StatusType): Promise<number> {
  const row = await h.database.db.kysely
    .insertInto('statuses')
    .values({ account_id: accountId, name: `${type}-${Math.random()}`, type, position: 99, created_at: h.clock.now() })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

const db = () => h.database.db.kysely;
const lead = (id: number) => db().selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
/** The channel `incoming(who)` opened on the integration. */
const channelOf = (integration: IntegrationRow, who: string) =>
  db()
    .selectFrom('sources')
    .selectAll()
    .where('external_id', '=', `chat-${who}`)
    .where('integration_id', '=', integration.id)
    .executeTakeFirstOrThrow();
const eventsOf = (accountId: number) => db().selectFrom('events').selectAll().where('account_id', '=', accountId).orderBy('id').execute();

/** What an integration's conversations hold, without ids (which differ between integrations). */
async function storedState(integrationId: number) {
  const k = db();
  const messages = await k.selectFrom('messages').selectAll().where('integration_id', '=', integrationId).orderBy('external_id').execute();
  const externalOf = new Map(messages.map((x) => [x.id, x.external_id]));
  const profiles = await k.selectFrom('profiles').selectAll().where('integration_id', '=', integrationId).orderBy('social_id').execute();
  const socialOf = new Map(profiles.map((p) => [p.customer_id, p.social_id]));
  const customers = await k
    .selectFrom('customers')
    .selectAll()
    .where('id', 'in', [...socialOf.keys(), -1])
    .execute();
  const leads = await k.selectFrom('leads').selectAll().where('integration_id', '=', integrationId).orderBy('id').execute();
  const leadName = new Map(
    leads.map((l) => [
      l.id,
      `${socialOf.get(l.customer_id)}:${leads.filter((o) => o.customer_id === l.customer_id && o.id < l.id).length}`,
    ]),
  );
  const sources = await k.selectFrom('sources').selectAll().where('integration_id', '=', integrationId).orderBy('external_id').execute();
  const events = await k
    .selectFrom('events')
    .select(['type', 'lead_id', 'payload', 'created_at'])
    .where(
      'account_id',
      '=',
      (await k.selectFrom('integrations').select('account_id').where('id', '=', integrationId).executeTakeFirstOrThrow()).account_id,
    )
    .execute();
  const ours = new Set(leads.map((l) => l.id));
  const withoutIds = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(withoutIds);
    if (value && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value)
          .filter(([key]) => !/id$/i.test(key) && key !== 'sa' && key !== 'identifier')
          .map(([key, v]) => [key, withoutIds(v)]),
      );
    }
    return value;
  };
  return {
    messages: messages.map(({ id, lead_id, source_id, integration_id, profile_id, account_id, reply_to, ...rest }) => ({
      ...rest,
      lead: leadName.get(lead_id),
      reply_to: reply_to === null ? null : withoutIds(JSON.parse(reply_to)),
    })),
    leads: leads
      .map(({ id, account_id, integration_id, customer_id, last_message_id, ...rest }) => ({
        ...rest,
        name: leadName.get(id) as string,
        last_message: last_message_id === null ? null : externalOf.get(last_message_id),
      }))
      .sort((x, y) => x.name.localeCompare(y.name)),
    profiles: profiles.map(({ id, account_id, integration_id, customer_id, ...rest }) => rest),
    sources: sources.map(({ id, account_id, integration_id, customer_id, ...rest }) => rest),
    customers: customers
      .map(({ id, account_id, ...rest }) => ({ ...rest, of: socialOf.get(id) as string }))
      .sort((x, y) => x.of.localeCompare(y.of)),
    events: events
      .filter((e) =>
        e.lead_id === null ? socialOf.has((JSON.parse(e.payload) as { customerId?: number }).customerId ?? -1) : ours.has(e.lead_id),
      )
      .map((e) => ({
        type: e.type,
        lead: e.lead_id === null ? null : leadName.get(e.lead_id),
        created_at: e.created_at,
        payload: withoutIds(JSON.parse(e.payload)),
      }))
      .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
  };
}

/** A plugin counting the statements run through it (begin and commit are not counted). */
describe('ingest', () => {
  it('stores a message whose texts carry NUL characters without them (PostgreSQL cannot store NUL), once', async () => {
    const { integration } = await setup();
    const message = incoming('nul\u0000user', {
      text: 'before\u0000after',
      sender: { socialId: 'nul\u0000user', name: 'Ann\u0000 B', login: 'ann' },
      attachments: [{ type: 'link', url: 'https://example.com/a', text: 'file\u0000.txt' }],
    });
    const result = await h.services.ingest.ingest(integration, message);
    expect(result.duplicate).toBe(false);
    const stored = await db().selectFrom('messages').selectAll().where('id', '=', result.messageId).executeTakeFirstOrThrow();
    expect(JSON.stringify(stored)).not.toContain('\\u0000');
    expect(stored.text).toBe('beforeafter');
    const l = await lead(result.leadId);
    const customer = await db().selectFrom('customers').select('name').where('id', '=', l.customer_id).executeTakeFirstOrThrow();
    expect(customer.name).toBe('Ann B');
    // The same provider message again is the same message.
    expect((await h.services.ingest.ingest(integration, message)).duplicate).toBe(true);
  });

  it('creates customer, profile, channel, inbox lead and message, with their events, in one go', async () => {
    const { integration, accountId } = await setup();
    const result = await h.services.ingest.ingest(integration, incoming('alice', { text: 'hi there' }));
    expect(result).toMatchObject({ isNewLead: true, isNewCustomer: true, duplicate: false });

    const l = await lead(result.leadId);
    expect(l).toMatchObject({
      status_id: null,
      user_id: null,
      status_type: 'inbox',
      unread_count: 1,
      last_message_id: result.messageId,
      last_message_incoming: 1,
      response_time: null,
    });
    const customer = await db().selectFrom('customers').selectAll().where('id', '=', l.customer_id).executeTakeFirstOrThrow();
    expect(customer).toMatchObject({ name: 'Customer alice', login: 'login_alice', account_id: accountId });
    const profile = await db().selectFrom('profiles').selectAll().where('customer_id', '=', customer.id).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: 'alice', type: 'widget', integration_id: integration.id });
    const source = await db().selectFrom('sources').selectAll().where('customer_id', '=', customer.id).executeTakeFirstOrThrow();
    expect(source).toMatchObject({ external_id: 'chat-alice', type: 'message', sender: 'alice' });

    const events = await eventsOf(accountId);
    expect(events.map((e) => e.type)).toEqual(['customer.created', 'lead.created', 'message.incoming']);
    const payload = JSON.parse(events[2].payload);
    expect(payload).toMatchObject({
      type: 'message.incoming',
      accountId,
      leadId: result.leadId,
      isNewLead: true,
      isNewCustomer: true,
      message: {
        messageId: String(result.messageId),
        incoming: true,
        message: { text: 'hi there', url: '', attachments: [] },
        sa: { id: integration.id, type: 'widget' },
        sender: { id: profile.id, customerId: customer.id, socialId: 'alice' },
        source: { id: 'chat-alice', realId: source.id, type: 'message', saId: integration.id },
      },
    });
  });

  it('stores a redelivered message once and changes nothing the second time', async () => {
    const { integration, accountId } = await setup();
    const msg = incoming('bob');
    const first = await h.services.ingest.ingest(integration, msg);
    const eventsBefore = (await eventsOf(accountId)).length;
    const again = await h.services.ingest.ingest(integration, { ...msg, text: 'changed' });
    expect(again).toMatchObject({ duplicate: true, messageId: first.messageId, leadId: first.leadId });
    const count = await db()
      .selectFrom('messages')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('integration_id', '=', integration.id)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
    expect((await lead(first.leadId)).unread_count).toBe(1);
    expect((await eventsOf(accountId)).length).toBe(eventsBefore);
  });

  it('stores each of many concurrent deliveries of one message once', async () => {
    const { integration } = await setup();
    const msg = incoming('carol');
    const results = await Promise.all(Array.from({ length: 5 }, () => h.services.ingest.ingest(integration, msg)));
    expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
    const rows = await db().selectFrom('messages').selectAll().where('integration_id', '=', integration.id).execute();
    expect(rows).toHaveLength(1);
    const leads = await db().selectFrom('leads').selectAll().where('integration_id', '=', integration.id).execute();
    expect(leads).toHaveLength(1);
  });

  it('keeps one lead when a customer sends many messages at once', async () => {
    const { integration } = await setup();
    await Promise.all(Array.from({ length: 6 }, () => h.services.ingest.ingest(integration, incoming('dave'))));
    const leads = await db().selectFrom('leads').selectAll().where('integration_id', '=', integration.id).execute();
    expect(leads).toHaveLength(1);
    expect(leads[0].unread_count).toBe(6);
  });

  it("keeps one customer and lead when two processes ingest a new customer's messages at once, storing every message", async () => {
    const { integration } = await setup();
    // A second pipeline stands for another process: its own transactions, the same database.
    const other = new IngestService(h.services.deps);
    const messages = Array.from({ length: 8 }, () => incoming('erin'));
    const results = await Promise.all(messages.map((m, i) => (i % 2 ? other : h.services.ingest).ingest(integration, m)));
    expect(results.filter((r) => r.duplicate)).toHaveLength(0);
    const customers = await db().selectFrom('profiles').select('customer_id').where('integration_id', '=', integration.id).execute();
    expect(customers).toHaveLength(1);
    const leads = await db().selectFrom('leads').selectAll().where('integration_id', '=', integration.id).execute();
    expect(leads).toHaveLength(1);
    expect(leads[0].unread_count).toBe(8);
  });

  if (DIALECT === 'postgres') {
    /** Holds lane 0's lock, as another process's batch under way would, until `release()`. */
    async function holdLane(inSchema?: string): Promise<{ release: () => Promise<void> }> {
      let release = (): void => {};
      let holding = (): void => {};
      const locked = new Promise<void>((resolve) => (holding = resolve));
      const other = h.services.deps.db.kysely.transaction().execute(async (trx) => {
        if (inSchema) await sql`select set_config('search_path', ${inSchema}, true)`.execute(trx);
        await sql`select pg_advisory_xact_lock(${sql.raw(laneKey)}, 0)`.execute(trx);
        holding();
        await new Promise<void>((resolve) => (release = resolve));
      });
      await locked;
      return {
        release: async () => {
          release();
          await other;
        },
      };
    }

    /** A pipeline of its own (another process's, or this one's), its transactions counted. */
    function watchedPipeline(laneWaitMs?: number): { pipeline: IngestService; seen: () => { started: number; most: number } } {
      const { db: database, config } = h.services.deps;
      const watched = transactionWatch(database.kysely);
      const pipeline = new IngestService(
        { ...h.services.deps, db: { ...database, kysely: watched.kysely }, config: { ...config, pgIngestLanes: 1 } },
        { laneWaitMs },
      );
      return { pipeline, seen: watched.seen };
    }

    it("reads a known sender's profile, channel and lead as the tables' rows, every column with its value and type", async () => {
      // The rows travel as json (migration 0078), then parsed: they must equal the rows read as rows.
      const { integration } = await setup();
      const first = await h.services.ingest.ingest(integration, incoming('rows-as-json', { text: 'Tab\t"quoted" \\ ünïcödé 🍐' }));
      const db = h.services.deps.db.kysely;
      await db
        .updateTable('leads')
        .set({ amount: Number.MAX_SAFE_INTEGER, details: '{"note":"line\\nbreak"}' })
        .where('id', '=', first.leadId)
        .execute();
      const [read] = await keyedTransaction(db, (trx) =>
        lockConversations(trx, {
          integrationIds: [integration.id],
          socialIds: ['rows-as-json'],
          externalIds: ['not-stored-yet'],
          channelTypes: ['message'],
          channelIds: ['chat-rows-as-json'],
        }),
      );
      expect(read.profile).toEqual(
        await db.selectFrom('profiles').selectAll().where('integration_id', '=', integration.id).executeTakeFirst(),
      );
      expect(read.state.source).toEqual(
        await db.selectFrom('sources').selectAll().where('integration_id', '=', integration.id).executeTakeFirst(),
      );
      expect(read.state.lead).toEqual(await db.selectFrom('leads').selectAll().where('id', '=', first.leadId).executeTakeFirst());
      expect(read.state.lead?.amount).toBe(Number.MAX_SAFE_INTEGER);
      expect(read.state.duplicate).toBeUndefined();
    });

    it('reads a batch sender’s conversation once it holds the sender: a lead made meanwhile by the holder takes the message', async () => {
      // The batch locks its senders and reads their conversations in one call (migration 0072):
      // the read must see what the transaction it waited for committed, as a statement of its own.
      const { integration, accountId } = await setup();
      const { pipeline } = watchedPipeline();
      const first = await pipeline.ingest(integration, incoming('vera'));
      const { customer_id } = await lead(first.leadId);
      // Another transaction holds Vera's profile and opens a newer lead for her.
      let commit = (): void => {};
      let holding = (): void => {};
      const held = new Promise<void>((resolve) => (holding = resolve));
      let holder = '';
      let newer = 0;
      const other = db()
        .transaction()
        .execute(async (trx) => {
          holder = (await sql<{ xid: string }>`select (txid_current() % 4294967296)::text as xid`.execute(trx)).rows[0].xid;
          await sql`select 1 from profiles where integration_id = ${integration.id} and social_id = 'vera' for update`.execute(trx);
          newer = (await insertInboxLead(trx, { accountId, integrationId: integration.id, customerId: customer_id, at: 1, now: 1 })).id;
          holding();
          await new Promise<void>((resolve) => (commit = resolve));
        });
      await held;
      const second = pipeline.ingest(integration, incoming('vera'));
      const waiting = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_locks
            where locktype = 'transactionid' and transactionid::text = ${holder} and not granted`.execute(db())
        ).rows[0].n;
      for (let turns = 0; (await waiting()) === 0; turns++) {
        if (turns > 10_000) throw new Error('the batch never waited for the sender');
        await new Promise((resolve) => setImmediate(resolve));
      }
      commit();
      await other;
      expect(newer).toBeGreaterThan(first.leadId);
      // Read in the snapshot taken before the wait, the message joined the older lead.
      expect(await second).toMatchObject({ leadId: newer, isNewLead: false, duplicate: false });
      expect(await lead(newer)).toMatchObject({ unread_count: 1 });
    });

    it('runs the ingest batches of every process one at a time per lane, a batch waiting its turn taking the messages that came meanwhile', async () => {
      // docs/performance.md: a batch takes its lane's lock with its begin,
      // then its messages: with two processes, batches stay as large as with one.
      const { integration } = await setup();
      const { pipeline, seen } = watchedPipeline();
      // Another process's batch of lane 0, under way.
      const held = await holdLane();
      const waiting = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_locks
            where locktype = 'advisory' and classid = (${sql.raw(laneKey)})::oid and objid = 0 and not granted`.execute(db())
        ).rows[0].n;
      const first = pipeline.ingest(integration, incoming('uma', { text: 'u1' }));
      for (let turns = 0; (await waiting()) === 0; turns++) {
        if (turns > 10_000) throw new Error('the batch never waited for the lock');
        await new Promise((resolve) => setImmediate(resolve));
      }
      const later = [incoming('vic', { text: 'v1' }), incoming('wes', { text: 'w1' })].map((m) => pipeline.ingest(integration, m));
      await new Promise((resolve) => setImmediate(resolve));
      const stored = () => db().selectFrom('messages').select('text').where('integration_id', '=', integration.id).orderBy('id').execute();
      expect(await stored()).toEqual([]);
      await held.release();
      const results = await Promise.all([first, ...later]);
      expect(results.map((r) => r.duplicate)).toEqual([false, false, false]);
      // One transaction for the three: the two that came while the first waited joined its batch.
      expect(seen()).toEqual({ started: 1, most: 1 });
      expect((await stored()).map((m) => m.text)).toEqual(['u1', 'v1', 'w1']);
    });

    it("lets go of its lane with its store statement: another process's batch runs while this one's transaction ends", async () => {
      // docs/performance.md: the store statement carries the lane's
      // release (db/database.ts releaseLockSql), one round trip and this process's work earlier.
      const { integration } = await setup();
      const { pipeline } = watchedPipeline();
      // Another session holds what the store statement needs last (its statement triggers write
      // lead_read_versions): the batch stops there, the rest of its statement run.
      let unblock = (): void => {};
      let blocking = (): void => {};
      const blocked = new Promise<void>((resolve) => (blocking = resolve));
      const holder = db()
        .transaction()
        .execute(async (trx) => {
          await sql`lock table lead_read_versions in share mode`.execute(trx);
          blocking();
          await new Promise<void>((resolve) => (unblock = resolve));
        });
      await blocked;
      const stored = pipeline.ingest(integration, incoming('ida', { text: 'i1' }));
      const waiting = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_locks
            where locktype = 'relation' and relation = 'lead_read_versions'::regclass and not granted`.execute(db())
        ).rows[0].n;
      try {
        for (let turns = 0; (await waiting()) === 0; turns++) {
          if (turns > 10_000) throw new Error('the batch never reached its statement triggers');
          await new Promise((resolve) => setImmediate(resolve));
        }
        // The batch's transaction is open, and its lane is free for another process's batch.
        const lane = await db()
          .transaction()
          .execute(
            async (trx) =>
              (await sql<{ had: boolean }>`select pg_try_advisory_xact_lock(${sql.raw(laneKey)}, 0) as had`.execute(trx)).rows[0].had,
          );
        expect(lane).toBe(true);
      } finally {
        unblock();
        await holder;
      }
      expect(await stored).toMatchObject({ duplicate: false, isNewCustomer: true });
      const texts = await db().selectFrom('messages').select('text').where('integration_id', '=', integration.id).execute();
      expect(texts.map((m) => m.text)).toEqual(['i1']);
    });

    it("batches a lane without its lock for a while once another process's batch held it past the wait", async () => {
      const { integration } = await setup();
      const { pipeline, seen } = watchedPipeline(100);
      const held = await holdLane();
      try {
        // The lock is not had in time: the batch runs without it (one more transaction, not one
        // per message), and the next batch does not wait for it again.
        const first = await Promise.all(
          [incoming('xan', { text: 'x1' }), incoming('yul', { text: 'y1' })].map((m) => pipeline.ingest(integration, m)),
        );
        expect(first.map((r) => r.duplicate)).toEqual([false, false]);
        expect(seen().started).toBe(2);
        await pipeline.ingest(integration, incoming('zed', { text: 'z1' }));
        expect(seen().started).toBe(3);
        const texts = await db().selectFrom('messages').select('text').where('integration_id', '=', integration.id).orderBy('id').execute();
        expect(texts.map((m) => m.text)).toEqual(['x1', 'y1', 'z1']);
      } finally {
        await held.release();
      }
    });

    it('does not wait for the lane locks of an installation in another schema of the database', async () => {
      // Advisory locks belong to the database: the lane's key is taken in the connection's schema.
      const { integration } = await setup();
      const { pipeline, seen } = watchedPipeline(100);
      const held = await holdLane('public');
      try {
        await pipeline.ingest(integration, incoming('abe', { text: 'a1' }));
        expect(seen().started).toBe(1);
      } finally {
        await held.release();
      }
    });
  }

  it('joins the open lead, and the lead in an active status', async () => {
    const { integration, accountId } = await setup();
    const first = await h.services.ingest.ingest(integration, incoming('erin'));
    const second = await h.services.ingest.ingest(integration, incoming('erin'));
    expect(second).toMatchObject({ leadId: first.leadId, isNewLead: false, isNewCustomer: false });
    const active = await statusOf(accountId, 'active');
    await db().updateTable('leads').set({ status_id: active, status_type: 'active' }).where('id', '=', first.leadId).execute();
    expect((await h.services.ingest.ingest(integration, incoming('erin'))).leadId).toBe(first.leadId);
  });

  it('creates a new inbox lead after the latest one was archived (completed or failed)', async () => {
    const { integration, accountId } = await setup();
    for (const type of ['completed', 'failed'] as const) {
      const first = await h.services.ingest.ingest(integration, incoming(`frank-${type}`));
      const status = await statusOf(accountId, type);
      await db().updateTable('leads').set({ status_id: status, status_type: type }).where('id', '=', first.leadId).execute();
      const next = await h.services.ingest.ingest(integration, incoming(`frank-${type}`));
      expect(next.isNewLead).toBe(true);
      expect(next.isNewCustomer).toBe(false);
      expect(next.leadId).not.toBe(first.leadId);
      expect(await lead(next.leadId)).toMatchObject({
        status_type: 'inbox',
        status_id: null,
        customer_id: (await lead(first.leadId)).customer_id,
      });
    }
  });

  it('lets a message join a lead in an ignore status without creating a lead', async () => {
    const { integration, accountId } = await setup();
    const first = await h.services.ingest.ingest(integration, incoming('gina'));
    const ignore = await statusOf(accountId, 'ignore');
    await db().updateTable('leads').set({ status_id: ignore, status_type: 'ignore' }).where('id', '=', first.leadId).execute();
    const next = await h.services.ingest.ingest(integration, incoming('gina'));
    expect(next).toMatchObject({ leadId: first.leadId, isNewLead: false });
    const events = (await eventsOf(accountId)).filter((e) => e.type === 'lead.created');
    expect(events).toHaveLength(1);
  });

  it('keeps leads of one social id apart across integrations', async () => {
    const { integration, accountId } = await setup();
    const otherId = await createIntegration(h, accountId, 'widget');
    const other = await db().selectFrom('integrations').selectAll().where('id', '=', otherId).executeTakeFirstOrThrow();
    const a = await h.services.ingest.ingest(integration, incoming('henry'));
    const b = await h.services.ingest.ingest(other, incoming('henry'));
    expect(b.isNewCustomer).toBe(true);
    expect(b.leadId).not.toBe(a.leadId);
  });

  it('refuses a channel type the integration cannot have, storing nothing', async () => {
    const { integration, accountId } = await setup('widget');
    const bad = incoming('ivy', { channel: { externalId: 'post-1', type: 'comment' } });
    await expect(h.services.ingest.ingest(integration, bad)).rejects.toMatchObject({ statusCode: 400 });
    expect(await eventsOf(accountId)).toHaveLength(0);
    expect(await db().selectFrom('customers').selectAll().where('account_id', '=', accountId).execute()).toHaveLength(0);
  });

  it('snapshots the quoted message of a reply', async () => {
    const { integration } = await setup();
    const first = await h.services.ingest.ingest(integration, incoming('jack', { externalId: 'orig-1', text: 'original' }));
    const reply = await h.services.ingest.ingest(integration, incoming('jack', { replyToExternalId: 'orig-1', text: 'reply' }));
    const row = await db().selectFrom('messages').selectAll().where('id', '=', reply.messageId).executeTakeFirstOrThrow();
    expect(JSON.parse(row.reply_to!)).toMatchObject({ messageId: first.messageId, incoming: true, message: { text: 'original' } });
  });
});

describe('message-fed lead fields', () => {
  it('count unread messages and measure the response time with the injected clock', async () => {
    const { integration } = await setup();
    const t0 = h.clock.now();
    const first = await h.services.ingest.ingest(integration, incoming('kate', { datetime: t0 }));
    h.clock.advance(30_000);
    await h.services.ingest.ingest(integration, incoming('kate', { datetime: t0 + 30_000 }));
    let l = await lead(first.leadId);
    expect(l.unread_count).toBe(2);
    expect(l.awaiting_since).toBe(t0);
    expect(l.response_time).toBeNull();

    h.clock.advance(60_000);
    const source = await db().selectFrom('sources').selectAll().where('external_id', '=', 'chat-kate').executeTakeFirstOrThrow();
    await db()
      .transaction()
      .execute((trx) =>
        h.services.ingest.recordOutgoing(trx, { integration, source, lead: l, userId: null }, [
          { externalId: 'out-kate-1', text: 'answer', attachments: [], replyTo: undefined, customId: 'c-1', at: t0 + 90_000 },
        ]),
      );
    l = await lead(first.leadId);
    expect(l.response_time).toBe(90_000);
    expect(l.awaiting_since).toBeNull();
    expect(l.last_message_incoming).toBe(0);
    expect(l.unread_count).toBe(2);
  });

  it('keeps the last message of the lead when an older one arrives late, in the stored row as in the answer', async () => {
    const { integration } = await setup();
    const t0 = h.clock.now();
    const first = await h.services.ingest.ingest(integration, incoming('lena', { datetime: t0 }));
    await h.services.ingest.ingest(integration, incoming('lena', { datetime: t0 - 60_000 }));
    expect(await lead(first.leadId)).toMatchObject({
      last_message_id: first.messageId,
      last_message_at: t0,
      unread_count: 2,
      awaiting_since: t0 - 60_000,
    });
    const newer = await h.services.ingest.ingest(integration, incoming('lena', { datetime: t0 + 1_000 }));
    expect(await lead(first.leadId)).toMatchObject({ last_message_id: newer.messageId, last_message_at: t0 + 1_000, unread_count: 3 });
  });

  it('stores a known customer’s message in few statements (PostgreSQL: each is a round trip)', async () => {
    const { integration } = await setup();
    await h.services.ingest.ingest(integration, incoming('nina'));
    const count = async (pgIngestLanes: number, message = incoming('nina')) => {
      const { counter, statements } = statementCounter();
      const { db: database, config } = h.services.deps;
      const counted = new IngestService({
        ...h.services.deps,
        db: { ...database, kysely: database.kysely.withPlugin(counter) },
        config: { ...config, pgIngestLanes },
      });
      const result = await counted.ingest(integration, message);
      expect(result).toMatchObject({ duplicate: false });
      return statements();
    };
    // PostgreSQL, batched (the default; begin and commit aside): the senders' profiles locked and
    // then the conversations read (redelivery check, channel, latest lead, message id) in one call
    // (migration 0072), the messages stored with their leads' fields and events. One message per
    // transaction: the profile locked with the redelivery check, the channel, the latest lead, the
    // message with its lead's fields, the event with the webhooks. SQLite (in process, one
    // transaction for concurrent units): each alone, in a savepoint, whatever the setting.
    expect(await count(2)).toBe(DIALECT === 'postgres' ? 2 : 10);
    expect(await count(0)).toBe(DIALECT === 'postgres' ? 5 : 10);
    // A sender seen first, batched: the same two (its customer, profile, channel and lead are
    // written with its message).
    if (DIALECT === 'postgres') expect(await count(2, incoming('someone-new'))).toBe(2);
  });

  it('stores the messages of several sends in a transaction in two statements on PostgreSQL besides their keys (quoting sends after the others), as it stores them one by one', async () => {
    const t0 = h.clock.now();
    // Two integrations with the same conversations; one stores the sends batched (PostgreSQL: the
    // leads locked with ids and held reports read, then one write for every message with its lead's
    // fields and event), the other one by one the long way (per message: insert, held reports, event).
    const conversations = async () => {
      const { integration } = await setup();
      const opened = [];
      for (const who of ['emp', 'other']) {
        const first = await h.services.ingest.ingest(
          integration,
          incoming(who, { externalId: `${who}-in-1`, datetime: t0, text: 'first' }),
        );
        await h.services.ingest.ingest(integration, incoming(who, { externalId: `${who}-in-2`, datetime: t0 + 1_000, text: 'second' }));
        const source = await channelOf(integration, who);
        opened.push({
          integration,
          source,
          leadId: first.leadId,
          quoted: await db().selectFrom('messages').selectAll().where('id', '=', first.messageId).executeTakeFirstOrThrow(),
        });
      }
      return opened;
    };
    const sends = (c: Awaited<ReturnType<typeof conversations>>) => {
      const [a, b] = c.map(({ quoted, ...rest }) => ({ ...rest, userId: null }));
      return {
        first: threeSends(a, b, t0, ['c-1', 'c-2']),
        second: [
          { ...b, records: [record('out-6', t0 + 8_000, { replyTo: c[1].quoted })] },
          { ...a, records: [record('out-7', t0 + 9_000)] },
        ],
      };
    };
    const batched = await conversations();
    const alone = await conversations();
    const { counter, statements } = statementCounter();
    const ingest = h.services.ingest;
    const first = await db()
      .withPlugin(counter)
      .transaction()
      .execute((trx) => ingest.recordOutgoingBatch(trx, sends(batched).first));
    // Begin and commit are not counted; SQLite: each send's lead read, then its messages' statements.
    // PostgreSQL: two, and one for each send key released (the first two sends').
    if (DIALECT === 'postgres') expect(statements()).toBe(2 + 2);
    const second = await db()
      .transaction()
      .execute((trx) => ingest.recordOutgoingBatch(trx, sends(batched).second));
    // One after another, the long way; on PostgreSQL a batch stores a quoting send after the others.
    const { first: one, second: two } = sends(alone);
    const expected = [];
    for (const send of [...one, ...(DIALECT === 'postgres' ? [two[1], two[0]] : two)]) {
      const before = await lead(send.leadId);
      expected.push(
        await db()
          .transaction()
          .execute((trx) => ingest.recordOutgoing(trx, { ...send, lead: before }, send.records)),
      );
    }
    if (DIALECT === 'postgres') expected.splice(3, 2, expected[4], expected[3]);
    // The answers differ only by ids (the integrations' own); the stored rows and events, by nothing.
    const shown = (list: HistoryMessage[][]) =>
      list.map((answer) =>
        answer.map(({ messageId, sa, source, sender, replyTo, ...rest }) => ({ ...rest, quoted: replyTo?.message.text ?? null })),
      );
    expect(shown([...first, ...second])).toEqual(shown(expected));
    const ids = await db()
      .selectFrom('messages')
      .select('id')
      .where('integration_id', '=', batched[0].integration.id)
      .where('incoming', '=', 0)
      .orderBy('external_id')
      .execute();
    expect(
      [...first, ...second]
        .flat()
        .map((a) => Number(a.messageId))
        .sort((x, y) => x - y),
    ).toEqual(ids.map((r) => r.id).sort((x, y) => x - y));
    expect(await storedState(batched[0].integration.id)).toEqual(await storedState(alone[0].integration.id));
    expect(await lead(batched[0].leadId)).toMatchObject({
      awaiting_since: null,
      unread_count: 2,
      last_message_at: t0 + 9_000,
      last_message_incoming: 0,
    });
  });

  it('stores concurrent sends together (one statement on PostgreSQL), and a send that fails alone', async () => {
    const { integration } = await setup();
    const opened: OutgoingUnit[] = [];
    for (const who of ['s1', 's2', 's3']) {
      const { leadId } = await h.services.ingest.ingest(integration, incoming(who));
      const source = await channelOf(integration, who);
      opened.push({ integration, source, leadId, userId: null, records: [] });
    }
    const send = (c: OutgoingUnit, externalId: string): OutgoingUnit => ({
      ...c,
      records: [record(externalId, h.clock.now(), { text: externalId })],
    });
    const { counter, statements } = statementCounter();
    const { db: database } = h.services.deps;
    const counted = new IngestService({ ...h.services.deps, db: { ...database, kysely: database.kysely.withPlugin(counter) } });
    const stored = await Promise.all(opened.map((c, i) => counted.storeOutgoing(send(c, `together-${i}`))));
    // PostgreSQL: one statement for the three sends, and no transaction around it.
    if (DIALECT === 'postgres') expect(statements()).toBe(1);
    expect(stored.map((s) => s.map((m) => m.message.text))).toEqual([['together-0'], ['together-1'], ['together-2']]);
    // A lead gone meanwhile: its send fails, the others of its batch are stored, in their order
    // (PostgreSQL: the batch fails, then its sends are stored one after another, never side by side).
    const watched = transactionWatch(database.kysely);
    const watching = new IngestService({ ...h.services.deps, db: { ...database, kysely: watched.kysely } });
    const outcomes = await Promise.allSettled([
      watching.storeOutgoing(send(opened[0], 'kept-0')),
      watching.storeOutgoing(send({ ...opened[1], leadId: -1 }, 'lost')),
      watching.storeOutgoing(send(opened[2], 'kept-2')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    if (DIALECT === 'postgres') expect(watched.seen()).toEqual({ started: 4, most: 1 });
    const texts = await db()
      .selectFrom('messages')
      .select('text')
      .where('integration_id', '=', integration.id)
      .where('incoming', '=', 0)
      .orderBy('id')
      .execute();
    expect(texts.map((t) => t.text)).toEqual(['together-0', 'together-1', 'together-2', 'kept-0', 'kept-2']);
  });

  // PostgreSQL only: SQLite stores sends one after another and has no send batches.
  if (DIALECT === 'postgres') {
    it('takes into a send batch the sends queued while it waited for its connection and its begin', async () => {
      const { integration } = await setup();
      const opened: OutgoingUnit[] = [];
      for (const who of ['w1', 'w2']) {
        const { leadId } = await h.services.ingest.ingest(integration, incoming(who));
        opened.push({ integration, source: await channelOf(integration, who), leadId, userId: null, records: [] });
      }
      const send = (c: OutgoingUnit, externalId: string): OutgoingUnit => ({
        ...c,
        records: [record(externalId, h.clock.now(), { text: externalId })],
      });
      // One connection, held here: the first send's batch starts and waits for it.
      const one = await openDatabase({ databaseUrl: h.database.url, dataDir: h.dataDir, poolSize: 1 });
      try {
        const watched = transactionWatch(one.kysely);
        const service = new IngestService({ ...h.services.deps, db: { ...one, kysely: watched.kysely } });
        let release!: () => void;
        let holding!: () => void;
        const holds = new Promise<void>((resolve) => (holding = resolve));
        const held = one.kysely.connection().execute(
          () =>
            new Promise<void>((resolve) => {
              release = resolve;
              holding();
            }),
        );
        await holds;
        const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
        const first = service.storeOutgoing(send(opened[0], 'waited-0'));
        while (watched.seen().started === 0) await turn();
        // A send of a later turn, while the batch waits: it joins that batch, no second one.
        const second = service.storeOutgoing(send(opened[1], 'waited-1'));
        await turn();
        release();
        await held;
        const stored = await Promise.all([first, second]);
        expect(stored.map((s) => s.map((m) => m.message.text))).toEqual([['waited-0'], ['waited-1']]);
        expect(watched.seen()).toEqual({ started: 1, most: 1 });
      } finally {
        await one.close();
      }
    });

    it('stores a batch of sends in one statement as a transaction stores them: messages, leads, events, deliveries, keys released', async () => {
      const t0 = h.clock.now();
      // Two accounts alike: one stores the batch in one statement, the other in a transaction.
      const account = async () => {
        const { integration, accountId } = await setup();
        const hooks: number[] = [];
        for (const [version, events, status] of [
          ['v1.3', null, 1],
          ['v1.1', null, 1],
          ['v1.2', ['message.outgoing'], 1],
          ['v1.3', ['lead.created'], 1],
          ['v1.3', 'not a list', 1],
          ['v1.3', null, 0],
        ] as const) {
          const row = await db()
            .insertInto('webhooks')
            .values({
              account_id: accountId,
              url: `https://example.com/${hooks.length}`,
              events: events === null ? null : JSON.stringify(events),
              secret: 'whsec_dGVzdA==',
              api_version: version,
              status,
              created_at: t0,
            })
            .returning('id')
            .executeTakeFirstOrThrow();
          hooks.push(row.id);
        }
        const units: OutgoingUnit[] = [];
        for (const who of ['emp', 'other']) {
          const { leadId } = await h.services.ingest.ingest(
            integration,
            incoming(who, { externalId: `${who}-in`, datetime: t0, text: 'hello' }),
          );
          units.push({ integration, source: await channelOf(integration, who), leadId, userId: null, records: [] });
        }
        for (const [i, u] of units.entries())
          await db()
            .insertInto('send_keys')
            .values({ lead_id: u.leadId, custom_id: `key-${i}`, claimed_until: t0 + 60_000, created_at: t0 })
            .execute();
        const [a, b] = units;
        const batch = threeSends(a, b, t0, ['key-0', 'key-1']);
        return { integration, accountId, hooks, batch };
      };
      const once = await account();
      const inTransaction = await account();
      const { counter, statements } = statementCounter();
      const atOnce = await storeSendsAtOnce(db().withPlugin(counter), once.batch, h.clock.now());
      expect(statements()).toBe(1);
      const expected = await db()
        .transaction()
        .execute((trx) => h.services.ingest.recordOutgoingBatch(trx, inTransaction.batch));
      const shown = (list: HistoryMessage[][]) => list.map((answer) => answer.map(({ messageId, sa, source, sender, ...rest }) => rest));
      expect(atOnce && shown(atOnce)).toEqual(shown(expected));
      expect(await storedState(once.integration.id)).toEqual(await storedState(inTransaction.integration.id));
      // The answers' ids are the stored messages', and each event's payload carries its message's.
      const stored = await db()
        .selectFrom('messages')
        .select(['id', 'text'])
        .where('integration_id', '=', once.integration.id)
        .where('incoming', '=', 0)
        .orderBy('id')
        .execute();
      expect(atOnce?.flat().map((m) => Number(m.messageId))).toEqual(stored.map((m) => m.id));
      const events = await db()
        .selectFrom('events')
        .select(['id', 'payload', 'lead_id'])
        .where('account_id', '=', once.accountId)
        .where('type', '=', 'message.outgoing')
        .orderBy('id')
        .execute();
      expect(events.map((e) => (JSON.parse(e.payload) as { message: HistoryMessage }).message)).toEqual(atOnce?.flat());
      // The deliveries: the same webhooks (by their place in the list) for the same events.
      const deliveries = async (of: { accountId: number; hooks: number[] }) =>
        (
          await db()
            .selectFrom('deliveries as d')
            .innerJoin('events as e', 'e.id', 'd.event_id')
            .select(['d.webhook_id', 'd.message_id', 'd.event_id', 'e.payload'])
            .where('e.account_id', '=', of.accountId)
            .where('e.type', '=', 'message.outgoing')
            .orderBy('d.id')
            .execute()
        ).map((d) => ({
          hook: of.hooks.indexOf(d.webhook_id),
          named: d.message_id === `msg_${d.event_id}`,
          text: (JSON.parse(d.payload) as { message: HistoryMessage }).message.message.text,
        }));
      const delivered = await deliveries(once);
      expect(delivered.map((d) => d.hook)).toEqual([0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2]);
      expect(delivered).toEqual(await deliveries(inTransaction));
      const keys = async (of: { batch: OutgoingUnit[] }) =>
        db()
          .selectFrom('send_keys')
          .select('custom_id')
          .where(
            'lead_id',
            'in',
            of.batch.map((u) => u.leadId),
          )
          .execute();
      expect(await keys(once)).toEqual([]);
      expect(await keys(inTransaction)).toEqual([]);
    });

    it('stores nothing in one statement when a report is held for a message or a lead is gone, and quotes the long way', async () => {
      const { integration } = await setup();
      const { leadId } = await h.services.ingest.ingest(integration, incoming('held'));
      const source = await channelOf(integration, 'held');
      const unit = (externalId: string, over: Partial<OutgoingRecord> = {}): OutgoingUnit => ({
        integration,
        source,
        leadId,
        userId: null,
        records: [record(externalId, h.clock.now(), { text: externalId, ...over })],
      });
      const outgoing = () =>
        db()
          .selectFrom('messages')
          .select(['external_id', 'delivery_status'])
          .where('lead_id', '=', leadId)
          .where('incoming', '=', 0)
          .execute();
      const { counter, statements } = statementCounter();
      const counted = db().withPlugin(counter);
      await db()
        .insertInto('held_delivery_statuses')
        .values({ integration_id: integration.id, external_id: 'early', status: 'read', error: null, created_at: h.clock.now() })
        .execute();
      expect(await storeSendsAtOnce(counted, [unit('plain'), unit('early')], h.clock.now())).toBeUndefined();
      expect(statements()).toBe(1);
      expect(await outgoing()).toEqual([]);
      // Stored through the service, the batch goes the long way, which applies the report.
      await h.services.ingest.storeOutgoing(unit('early'));
      expect(await outgoing()).toEqual([{ external_id: 'early', delivery_status: 'read' }]);
      await expect(storeSendsAtOnce(counted, [unit('plain'), { ...unit('lost'), leadId: -1 }], h.clock.now())).rejects.toThrow(
        /does not exist/,
      );
      expect(await outgoing()).toHaveLength(1);
      const quoted = await db()
        .selectFrom('messages')
        .selectAll()
        .where('lead_id', '=', leadId)
        .where('incoming', '=', 1)
        .executeTakeFirstOrThrow();
      const before = statements();
      expect(await storeSendsAtOnce(counted, [unit('quoting', { replyTo: quoted })], h.clock.now())).toBeUndefined();
      expect(statements()).toBe(before);
    });
  }

  it('ingests the messages of a batch that failed one after another, in their order, a message failing alone', async () => {
    const { integration } = await setup();
    const { db: database } = h.services.deps;
    const watched = transactionWatch(database.kysely);
    const watching = new IngestService({ ...h.services.deps, db: { ...database, kysely: watched.kysely } });
    // One batch on PostgreSQL: an integration gone meanwhile fails it, then the others are ingested on their own.
    const messages = [
      incoming('quinn', { text: 'q1' }),
      incoming('rose', { text: 'lost' }),
      incoming('quinn', { text: 'q2' }),
      incoming('quinn', { text: 'q3' }),
      incoming('sam', { text: 's1' }),
    ];
    const outcomes = await Promise.allSettled(
      messages.map((m, i) => watching.ingest(i === 1 ? { ...integration, id: -1 } : integration, m)),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    if (DIALECT === 'postgres') expect(watched.seen()).toEqual({ started: 6, most: 1 });
    const texts = await db().selectFrom('messages').select('text').where('integration_id', '=', integration.id).orderBy('id').execute();
    expect(texts.map((t) => t.text)).toEqual(['q1', 'q2', 'q3', 's1']);
    const leads = await db().selectFrom('leads').selectAll().where('integration_id', '=', integration.id).orderBy('id').execute();
    expect(leads.map((l) => l.unread_count)).toEqual([3, 1]);
  });

  it('stores messages ingested at once as it stores them one after another (redeliveries, new customers, leads and channels, a channel shared, replies, changed profiles, moved deadlines, a sender twice)', async () => {
    const t0 = h.clock.now();
    // Two integrations given the same history: one ingests the last messages at once (one batch on
    // PostgreSQL, one group commit on SQLite), the other one after another, each in its own transaction.
    const at = (i: number) => t0 + i * 1_000;
    const known = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    const earlier = (socialId: string, i: number): IncomingMessage => ({
      externalId: `before-${socialId}`,
      datetime: at(i),
      sender: { socialId, name: `Customer ${socialId}`, login: socialId },
      channel: { externalId: `chat-${socialId}`, type: 'message', expiresAt: at(i) + 86_400_000 },
      text: `first from ${socialId}`,
    });
    const m = (externalId: string, socialId: string, i: number, over: Partial<IncomingMessage> = {}): IncomingMessage => ({
      externalId,
      datetime: at(i),
      sender: { socialId, name: `Customer ${socialId}`, login: socialId },
      channel: { externalId: `chat-${socialId}`, type: 'message' },
      text: `${externalId} from ${socialId}`,
      ...over,
    });
    const batch: IncomingMessage[] = [
      m('b1', 'k1', 10),
      m('b2', 'k2', 11, { sender: { socialId: 'k2', name: 'Renamed k2', login: 'k2' } }),
      m('b3', 'n1', 12),
      m('b4', 'n1', 13),
      m('b5', 'k1', 14),
      { ...earlier('k3', 1), text: 'a redelivery' },
      m('b7', 'k3', 16, { replyToExternalId: 'before-k4' }),
      m('b8', 'k4', 17, { channel: { externalId: 'chat-k4', type: 'message', expiresAt: at(17) + 86_400_000 } }),
      m('b9', 'k5', 18),
      m('b1', 'k1', 19, { text: 'a redelivery inside the batch' }),
      m('b11', 'k6', 20, {
        text: 'quotes " and \' braces {a,b} backslash \\ NULL null, emoji 😀 and ümlauts',
        attachments: [{ type: 'photo', url: 'https://example.com/{1}.jpg' }],
        preview: { url: 'https://example.com', description: '{"x": [1, 2]}' },
      }),
      m('b12', 'k2', 8),
      m('b13', 'n2', 21, { channel: { externalId: 'chat-n2', type: 'message', name: 'N2', token: 'tk', expiresAt: at(21) + 5_000 } }),
      m('b14', 'k6', 22, { channel: { externalId: 'another-chat-k6', type: 'message' } }),
      m('b15', 'n3', 23, { channel: { externalId: 'chat-n2', type: 'message' } }),
    ];
    const { integration: atOnce, accountId } = await setup();
    const alone = await h.database.db.kysely
      .selectFrom('integrations')
      .selectAll()
      .where('id', '=', await createIntegration(h, accountId, 'widget', 'other'))
      .executeTakeFirstOrThrow();
    const completed = await statusOf(accountId, 'completed');
    for (const integration of [atOnce, alone]) {
      for (const [i, socialId] of known.entries()) await h.services.ingest.ingest(integration, earlier(socialId, i));
      const k5 = await db()
        .selectFrom('profiles')
        .select('customer_id')
        .where('integration_id', '=', integration.id)
        .where('social_id', '=', 'k5')
        .executeTakeFirstOrThrow();
      await db()
        .updateTable('leads')
        .set({ status_id: completed, status_type: 'completed' })
        .where('customer_id', '=', k5.customer_id)
        .execute();
    }
    const batched = new IngestService({ ...h.services.deps, config: { ...h.services.deps.config, pgIngestLanes: 1 } });
    const single = new IngestService({ ...h.services.deps, config: { ...h.services.deps.config, pgIngestLanes: 0 } });
    const fromBatch = await Promise.all(batch.map((message) => batched.ingest(atOnce, message)));
    const fromSingle: typeof fromBatch = [];
    for (const message of batch) fromSingle.push(await single.ingest(alone, message));

    expect(fromBatch.map((r) => [r.isNewLead, r.isNewCustomer, r.duplicate])).toEqual(
      fromSingle.map((r) => [r.isNewLead, r.isNewCustomer, r.duplicate]),
    );
    expect(fromBatch.map((r) => r.duplicate)).toEqual([
      false,
      false,
      false,
      false,
      false,
      true,
      false,
      false,
      false,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
    const a = await storedState(atOnce.id);
    const b = await storedState(alone.id);
    expect(a).toEqual(b);
    // The answers name the stored rows.
    for (const [i, r] of fromBatch.entries()) {
      const row = await db()
        .selectFrom('messages')
        .select(['external_id', 'lead_id'])
        .where('id', '=', r.messageId)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ external_id: batch[i].externalId, lead_id: r.leadId });
    }
    expect(a.messages.find((x) => x.external_id === 'b11')).toMatchObject({
      text: batch[10].text,
      attachments: JSON.stringify(batch[10].attachments),
    });
  });

  it("writes the deliveries of a batch's events in one statement on PostgreSQL: for each webhook that wants the event, in the events' order", async () => {
    const { integration, accountId } = await setup();
    const hook = (events: string[] | null) =>
      db()
        .insertInto('webhooks')
        .values({
          account_id: accountId,
          url: `https://example.com/${events ? events.join('-') : 'every'}`,
          events: events && JSON.stringify(events),
          secret: 'whsec_dGVzdA==',
          api_version: 'v1.3',
          created_at: h.clock.now(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
    const every = await hook(null);
    const leadsOnly = await hook(['lead.created']);
    const { counter, statements, reset } = statementCounter();
    const { db: database } = h.services.deps;
    const counted = new IngestService({
      ...h.services.deps,
      db: { ...database, kysely: database.kysely.withPlugin(counter) },
      config: { ...h.services.deps.config, pgIngestLanes: 1 },
    });
    // One batch each: three new senders on the account with webhooks, three on one without.
    await Promise.all(['tia', 'uma', 'vic'].map((who) => counted.ingest(integration, incoming(who))));
    const withWebhooks = statements();
    const bare = await setup();
    reset();
    await Promise.all(['tia', 'uma', 'vic'].map((who) => counted.ingest(bare.integration, incoming(who))));
    if (DIALECT === 'postgres') expect(withWebhooks).toBe(statements() + 1);

    const events = await eventsOf(accountId);
    expect(events.filter((e) => e.type === 'lead.created')).toHaveLength(3);
    const deliveries = await db()
      .selectFrom('deliveries')
      .select(['webhook_id', 'event_id', 'message_id', 'lead_id', 'status'])
      .where('webhook_id', 'in', [every.id, leadsOnly.id])
      .orderBy('id')
      .execute();
    const eventIds = deliveries.map((d) => d.event_id);
    expect(eventIds).toEqual([...eventIds].sort((x, y) => x - y));
    const byEvent = (list: typeof deliveries) =>
      [...list].sort((x, y) => x.event_id - y.event_id || x.webhook_id - y.webhook_id).map((d) => ({ ...d }));
    expect(byEvent(deliveries)).toEqual(
      byEvent(
        events.flatMap((e) =>
          (e.type === 'lead.created' ? [every.id, leadsOnly.id] : [every.id]).map((webhookId) => ({
            webhook_id: webhookId,
            event_id: e.id,
            message_id: `msg_${e.id}`,
            lead_id: e.lead_id,
            status: 'pending' as const,
          })),
        ),
      ),
    );
  });

  it('follow the rules for any sequence of messages, automation replies answering nothing (property)', () => {
    const step = fc.record({ kind: fc.constantFrom('in', 'out', 'automation'), gap: fc.integer({ min: 0, max: 100_000 }) });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), (steps) => {
        let fields = {
          unread_count: 0,
          last_message_id: null as number | null,
          last_message_at: 0,
          last_message_incoming: null as number | null,
          awaiting_since: null as number | null,
          response_time: null as number | null,
          responded_at: null as number | null,
        };
        let t = 1_000;
        let firstUnanswered: number | null = null;
        let expectedResponse: number | null = null;
        let expectedAnswerAt: number | null = null;
        let unread = 0;
        steps.forEach((s, i) => {
          t += s.gap;
          if (s.kind === 'in') {
            fields = afterIncoming(fields, i + 1, t);
            unread += 1;
            firstUnanswered ??= t;
          } else {
            fields = afterOutgoing(fields, i + 1, t, s.kind === 'automation');
            if (s.kind === 'out') {
              if (firstUnanswered !== null) {
                expectedResponse = t - firstUnanswered;
                expectedAnswerAt = t;
              }
              firstUnanswered = null;
            }
          }
        });
        const last = steps[steps.length - 1];
        expect(fields.unread_count).toBe(unread);
        expect(fields.last_message_id).toBe(steps.length);
        expect(fields.last_message_incoming).toBe(last.kind === 'in' ? 1 : 0);
        expect(fields.response_time).toBe(firstUnanswered === null ? expectedResponse : null);
        expect(fields.responded_at).toBe(expectedAnswerAt);
        expect(fields.awaiting_since).toBe(firstUnanswered);
      }),
    );
  });
});
