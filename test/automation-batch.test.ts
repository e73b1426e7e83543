import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectOf } from '../src/db/database.js';
import type { IntegrationRow } from '../src/db/schema.js';
import { AutomationWorker } from '../src/automation/automation-worker.js';
import { tagsOfLeads } from '../src/domain/leads/leads.repo.js';
import { ensureTag } from '../src/domain/tags/tags.repo.js';
import { DIALECT } from './helpers/database.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { automationFromNewest, createIntegrationRow, postRule } from './helpers/fixtures.js';
import { leadsQuery } from '../src/automation/rule-context.js';
import { planNodes, statementCounter, transactionWatch } from './helpers/statements.js';

/**
 * What automation costs the database (docs/performance.md, the `automation` scenario): a batch of
 * messages with 20 rules of which 10 match, each adding a tag, is run in one transaction, its
 * context read for the lot, and a tag a lead has already costs no statement.
 */
let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;
let seq = 0;

const db = () => h.database.db.kysely;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
  // The rules' tags exist from the start, as an account's tags mostly do.
  for (let i = 0; i < 20; i++) await ensureTag(db(), owner.accountId, `tag-${i}`, h.clock.now());
  for (let i = 0; i < 20; i++) {
    await postRule(h, owner, {
      name: `rule ${i}`,
      event: 'message.incoming',
      conditions: [{ field: 'message.text', op: 'contains', value: i % 2 ? 'hoodie' : 'refund' }],
      actions: [{ type: 'addTag', tag: `tag-${i}` }],
    });
  }
});

afterAll(async () => {
  await h.close();
});

/**
 * `customers` customers (of group `group`) writing `each` messages each (in turn), read by a
 * worker counting its statements and transactions.
 */
async function measure(customers: number, each: number, group = `g${++seq}`, beforePoll?: () => Promise<void>) {
  await automationFromNewest(h);
  const leads = new Set<number>();
  const batch = ++seq;
  for (let m = 0; m < each; m++) {
    for (let c = 0; c < customers; c++) {
      const { leadId } = await h.services.ingest.ingest(integration, {
        externalId: `batch-${batch}-${c}-${m}`,
        datetime: h.clock.now(),
        sender: { socialId: `${group}-${c}`, name: `Customer ${c}` },
        channel: { externalId: `chat-${group}-${c}`, type: 'message' },
        text: `Is the blue hoodie in stock? (${m})`,
      });
      leads.add(leadId);
    }
  }
  // On PostgreSQL, each lead row's version and locker: a row the worker locked or changed differs after.
  const rowMarks = async () =>
    dialectOf(db()) === 'postgres'
      ? new Map(
          (
            await sql<{ id: number; mark: string }>`select id, ctid::text || ' ' || xmax::text as mark from leads
              where id in (${sql.join([...leads])})`.execute(db())
          ).rows.map((r) => [Number(r.id), r.mark]),
        )
      : new Map<number, string>();
  const marks = await rowMarks();
  await beforePoll?.();
  const { counter, statements, tables } = statementCounter();
  const watched = transactionWatch(h.database.db.kysely.withPlugin(counter));
  const worker = new AutomationWorker({ ...h.services.deps, db: { ...h.database.db, kysely: watched.kysely } }, async () => {});
  try {
    await worker.poll();
  } finally {
    await worker.stop();
  }
  const written = [...(await rowMarks())].filter(([id, mark]) => marks.get(id) !== mark).length;
  const tagReads = tables().filter((t) => t === 'tags').length;
  return {
    leads: [...leads],
    messages: customers * each,
    statements: statements(),
    transactions: watched.seen().started,
    written,
    tagReads,
  };
}

async function rowCounts() {
  const count = async (table: 'automation_runs' | 'automation_quiet_runs' | 'automation_claims') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { runs: await count('automation_runs'), quiet: await count('automation_quiet_runs'), claims: await count('automation_claims') };
}

describe('a batch of messages with 20 rules, 10 matching', () => {
  it('runs in one transaction per 50 messages, every run done and every tag added', async () => {
    const r = await measure(20, 2);
    const runs = await db().selectFrom('automation_runs').select(['done', 'results']).where('lead_id', 'in', r.leads).execute();
    expect(runs).toHaveLength(r.messages * 10);
    expect(runs.every((run) => run.done === 1 && run.results === '[{"type":"addTag","ok":true}]')).toBe(true);
    const tags = await tagsOfLeads(db(), r.leads);
    for (const lead of r.leads) expect(tags.get(lead)?.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `tag-${2 * i + 1}`).sort());
    // A transaction of its own per action and a claim per run were 10 commits and 20 statements more per message.
    expect(r.transactions).toBe(1);
    // First messages of their leads: a lead's ten new tags in one statement with one lead.changed
    // (four statements each before), and a few statements per message.
    expect(r.statements / r.messages, `${r.statements} statements for ${r.messages} messages`).toBeLessThan(6);
    const changes = await db()
      .selectFrom('events')
      .select('lead_id')
      .where('type', '=', 'lead.changed')
      .where('lead_id', 'in', r.leads)
      .execute();
    expect(changes).toHaveLength(r.leads.length);
    // Every lead was acted on: each locked and changed on PostgreSQL.
    if (dialectOf(db()) === 'postgres') expect(r.written).toBe(r.leads.length);
  });

  it('a conversation going on: tags its lead has already cost no statement', async () => {
    const first = await measure(20, 1, 'talk');
    expect(first.transactions).toBe(1);
    // New leads: the ten tags their runs add (all existing by now) looked up in one statement.
    expect(first.tagReads).toBe(1);
    const before = await rowCounts();
    const again = await measure(20, 1, 'talk');
    expect(again.leads.sort()).toEqual(first.leads.sort());
    expect(again.statements / again.messages, `${again.statements} statements for ${again.messages} messages`).toBeLessThan(0.75);
    // PostgreSQL: no run acts, so the claims and quiet rows are one statement outside a transaction
    // (9 round trips for the batch, begin and commit included), and the leads are read with their
    // tags in one. No rule reads working hours, so they are not read, and no `message.incoming` is
    // looked up as caused (no action records one).
    const postgres = dialectOf(db()) === 'postgres';
    expect(again.transactions).toBe(postgres ? 0 : 1);
    expect(again.statements + 2 * again.transactions).toBeLessThanOrEqual(postgres ? 9 : 13);
    // Only read: no lead locked (a row lock is a write on PostgreSQL, and holds up its messages).
    expect(again.written).toBe(0);
    // Every run quiet: no run row of its own (ten per message were most of automation's cost), a
    // row per rule for the batch, and the event's claim.
    const after = await rowCounts();
    expect(after.runs - before.runs).toBe(0);
    expect(after.quiet - before.quiet).toBe(10);
    expect(after.claims - before.claims).toBe(again.messages);
    // The runs API still answers each of them, newest first, among the run rows of the first messages.
    const rule = await db().selectFrom('automation_rules').select('id').where('name', '=', 'rule 1').executeTakeFirstOrThrow();
    const res = await h.request({ method: 'GET', url: `/v1.3/automation/rules/${rule.id}/runs`, token: owner.access });
    const listed = (res.json() as { runs: Array<{ eventId: number; leadId: number; actions: unknown[] }> }).runs;
    const events = await db()
      .selectFrom('events')
      .select(['id', 'lead_id'])
      .where('type', '=', 'message.incoming')
      .where('lead_id', 'in', again.leads)
      .orderBy('id', 'desc')
      .execute();
    expect(events).toHaveLength(2 * again.messages);
    expect(listed.slice(0, events.length).map((r) => [r.eventId, r.leadId])).toEqual(events.map((e) => [Number(e.id), Number(e.lead_id)]));
    expect(listed.every((r) => JSON.stringify(r.actions) === '[{"type":"addTag","ok":true}]')).toBe(true);
  });
});

describe('a conversation going on, one of its messages taken by another process', () => {
  it('lists the runs of the other messages only, and writes no run row', async () => {
    const first = await measure(5, 1, 'shared');
    const newest = async () =>
      Number(
        (
          await db()
            .selectFrom('events')
            .select((eb) => eb.fn.max('id').as('id'))
            .executeTakeFirstOrThrow()
        ).id,
      );
    const since = await newest();
    const before = await rowCounts();
    let taken = 0;
    const again = await measure(5, 1, 'shared', async () => {
      taken = await newest();
      await db().insertInto('automation_claims').values({ consumer: 'rules', event_id: taken, created_at: h.clock.now() }).execute();
    });
    expect(again.leads.sort()).toEqual(first.leads.sort());
    const events = (
      await db()
        .selectFrom('events')
        .select('id')
        .where('type', '=', 'message.incoming')
        .where('id', '>', since)
        .where('lead_id', 'in', again.leads)
        .orderBy('id')
        .execute()
    ).map((e) => Number(e.id));
    expect(events).toHaveLength(5);
    expect(events).toContain(taken);
    // Each matching rule's row lists the other four events, in order; the taken one is left to its taker.
    const rows = await db().selectFrom('automation_quiet_runs').select(['event_id', 'runs']).where('event_id', '>', since).execute();
    expect(rows).toHaveLength(10);
    const others = events.filter((e) => e !== taken);
    for (const row of rows) {
      expect((JSON.parse(row.runs) as number[][]).map(([eventId]) => eventId)).toEqual(others);
      expect(Number(row.event_id)).toBe(Math.max(...others));
    }
    const after = await rowCounts();
    expect(after.runs - before.runs).toBe(0);
    expect(after.claims - before.claims).toBe(5);
  });
});

// SQLite reads a lead's tags in a statement of its own (tagsOfLeads): there is no plan to check.
if (DIALECT === 'postgres')
  describe('the leads read with their tags (PostgreSQL)', () => {
    it('looks up the tags table once per lead, not once per tag', async () => {
      const { leads } = await measure(10, 1);
      const query = leadsQuery(db(), leads, false).compile();
      // Whatever join PostgreSQL would pick: with the bench's statistics it picked a nested loop,
      // here it may not, so the other joins are ruled out for the transaction.
      const analyzed = await db()
        .transaction()
        .execute(async (trx) => {
          await sql`set local enable_hashjoin = off`.execute(trx);
          await sql`set local enable_mergejoin = off`.execute(trx);
          const { rows } = await trx.executeQuery<{ 'QUERY PLAN': unknown }>(
            CompiledQuery.raw(`explain (analyze, format json) ${query.sql}`, [...query.parameters]),
          );
          return rows[0]['QUERY PLAN'];
        });
      const loops = planNodes(analyzed)
        .filter((n) => n['Relation Name'] === 'tags')
        .reduce((sum, n) => sum + Number(n['Actual Loops']), 0);
      // Ten tags per lead: joined row by row, `tags` was scanned for each of them.
      expect(loops).toBeGreaterThan(0);
      expect(loops).toBeLessThanOrEqual(leads.length);
    });
  });

describe('new leads with round robin on', () => {
  it('are assigned in one transaction for the batch, each once', async () => {
    const put = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${integration.id}/distribution`,
      token: owner.access,
      payload: { mode: 'round_robin' },
    });
    expect(put.statusCode, put.body).toBe(200);
    try {
      const r = await measure(20, 1);
      // A transaction per lead before. SQLite: one for the batch's distribution and one for its
      // rules. PostgreSQL: the leads assigned in their rules' transaction, which locks them anyway,
      // all of them in one statement with their events, and their tags in one more: about 20
      // round trips for the 20 new leads, begin and commit and the poll's sweeps included (258
      // with a transaction of its own per lead's distribution and three statements per lead's tags).
      const postgres = dialectOf(db()) === 'postgres';
      expect(r.transactions).toBe(postgres ? 1 : 2);
      if (postgres) expect(r.statements + 2 * r.transactions, `${r.statements} statements`).toBeLessThanOrEqual(25);
      const leads = await db().selectFrom('leads').select('user_id').where('id', 'in', r.leads).execute();
      expect(leads.every((l) => l.user_id === owner.userId)).toBe(true);
      const changes = await db()
        .selectFrom('events')
        .select('lead_id')
        .where('type', '=', 'lead.changed')
        .where('lead_id', 'in', r.leads)
        .where('payload', 'like', '%userId%')
        .execute();
      expect(new Set(changes.map((c) => c.lead_id)).size).toBe(r.leads.length);
    } finally {
      await h.request({
        method: 'PUT',
        url: `/v1.3/integrations/${integration.id}/distribution`,
        token: owner.access,
        payload: { mode: 'off' },
      });
    }
  });
});

describe('events of one lead in one batch', () => {
  it("each event's conditions see what the earlier events' actions did", async () => {
    const rule = (payload: Record<string, unknown>) => postRule(h, owner, { name: 'r', ...payload });
    const tagger = await rule({
      event: 'message.incoming',
      conditions: [{ field: 'message.text', op: 'contains', value: 'first' }],
      actions: [{ type: 'addTag', tag: 'seen' }],
    });
    const noter = await rule({
      event: 'message.incoming',
      conditions: [{ field: 'lead.tags', op: 'includes', value: 'seen' }],
      actions: [{ type: 'note', text: 'seen before' }],
    });
    const newest = await db()
      .selectFrom('events')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirstOrThrow();
    await db()
      .updateTable('automation_cursors')
      .set({ event_id: Number(newest.id ?? 0) })
      .execute();
    let leadId = 0;
    for (const text of ['the first', 'the second']) {
      ({ leadId } = await h.services.ingest.ingest(integration, {
        externalId: `order-${text}`,
        datetime: h.clock.now(),
        sender: { socialId: 'order-1', name: 'Order' },
        channel: { externalId: 'chat-order-1', type: 'message' },
        text,
      }));
    }
    const worker = new AutomationWorker(h.services.deps, async () => {});
    try {
      await worker.poll();
    } finally {
      await worker.stop();
    }
    const runsOf = (ruleId: number) => db().selectFrom('automation_runs').select('event_id').where('rule_id', '=', ruleId).execute();
    expect(await runsOf(tagger)).toHaveLength(1);
    // Not at the first message (no tag yet), at the second (tagged by the first's run).
    expect(await runsOf(noter)).toHaveLength(1);
    const notes = await db().selectFrom('lead_notes').select('text').where('lead_id', '=', leadId).execute();
    expect(notes.map((n) => n.text)).toEqual(['seen before']);
  });
});
