import { sql, type RawBuilder } from 'kysely';
import { dialectOf, executeNamed, type Executor } from '../db/database.js';
import { numberLiteral, textLiteral } from '../db/pg-arrays.js';
import type { AutomationRunRow } from '../db/schema.js';

/**
 * Takes the run of a rule for an event: a new row, or one left unfinished by a process that
 * stopped (its lease passed). Undefined when the run is done or another process holds it.
 */
export async function claimRun(
  db: Executor,
  p: { ruleId: number; eventId: number; leadId: number | null; now: number; leaseMs: number },
): Promise<AutomationRunRow | undefined> {
  const fresh = await db
    .insertInto('automation_runs')
    .values({
      rule_id: p.ruleId,
      event_id: p.eventId,
      lead_id: p.leadId,
      at: p.now,
      results: '[]',
      done: 0,
      claimed_until: p.now + p.leaseMs,
    })
    .onConflict((oc) => oc.columns(['rule_id', 'event_id']).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (fresh) return fresh;
  return db
    .updateTable('automation_runs')
    .set({ claimed_until: p.now + p.leaseMs })
    .where('rule_id', '=', p.ruleId)
    .where('event_id', '=', p.eventId)
    .where('done', '=', 0)
    .where('claimed_until', '<', p.now)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Takes runs (a rule for an event each), in the caller's transaction, in one statement (and a
 * second only when some rows existed already): `fresh`, new rows, and `resumed`, rows left
 * unfinished by a process that stopped (their lease passed). Runs done, or held by another
 * process, are left out.
 */
export async function claimRuns(
  db: Executor,
  wanted: Array<{ ruleId: number; eventId: number; leadId: number | null }>,
  now: number,
  leaseMs: number,
): Promise<{ fresh: AutomationRunRow[]; resumed: AutomationRunRow[] }> {
  if (!wanted.length) return { fresh: [], resumed: [] };
  // The casts give PostgreSQL the parameters' types (VALUES leaves them text) and mean nothing to SQLite.
  const rows = wanted.map((r) => sql`(cast(${r.ruleId} as bigint), cast(${r.eventId} as bigint), cast(${r.leadId} as bigint))`);
  const { rows: fresh } =
    await sql<AutomationRunRow>`insert into automation_runs (rule_id, event_id, lead_id, at, results, done, claimed_until)
    select v.column1, v.column2, v.column3, cast(${now} as bigint), '[]', 0, cast(${now + leaseMs} as bigint)
    from (values ${sql.join(rows)}) as v where v.column1 in (${liveRules(
      db,
      wanted.map((r) => r.ruleId),
    )})
    on conflict (rule_id, event_id) do nothing returning *`.execute(db);
  if (fresh.length === wanted.length) return { fresh, resumed: [] };
  const taken = new Set(fresh.map((r) => `${r.rule_id}:${r.event_id}`));
  const others = wanted.filter((r) => !taken.has(`${r.ruleId}:${r.eventId}`));
  const resumed = await db
    .updateTable('automation_runs')
    .set({ claimed_until: now + leaseMs })
    .where(sql<boolean>`(rule_id, event_id) in (${sql.join(others.map((r) => sql`(${r.ruleId}, ${r.eventId})`))})`)
    .where('done', '=', 0)
    .where('claimed_until', '<', now)
    .returningAll()
    .execute();
  return { fresh, resumed };
}

/** A run that changed nothing: its rule, event and lead, and the results of its actions. */
export interface QuietRun {
  ruleId: number;
  eventId: number;
  leadId: number | null;
  results: unknown[];
}

/**
 * Runs that changed nothing, in one statement: a row per rule holding its runs (migration 0140)
 * rather than a row per run, which with its indexes was most of what automation cost a message.
 */
export async function saveQuietRuns(db: Executor, quiet: QuietRun[], now: number): Promise<void> {
  if (!quiet.length) return;
  const byRule = groupByRule(quiet);
  // The casts give PostgreSQL the parameters' types (VALUES leaves them text) and mean nothing to SQLite.
  const rows = [...byRule].map(
    ([ruleId, list]) =>
      sql`(cast(${ruleId} as bigint), cast(${Math.max(...list.map((q) => q.eventId))} as bigint),
        cast(${JSON.stringify(list.map((q) => [q.eventId, q.leadId]))} as text), cast(${JSON.stringify(list[0].results)} as text))`,
  );
  await sql`insert into automation_quiet_runs (rule_id, event_id, at, runs, actions)
    select v.column1, v.column2, cast(${now} as bigint), v.column3, v.column4
    from (values ${sql.join(rows)}) as v where v.column1 in (${liveRules(db, [...byRule.keys()])})`.execute(db);
}

/**
 * PostgreSQL: a chunk whose every run is quiet, in one statement and no transaction: the events'
 * `rules` claims, and for the events taken (an event another process took is left out whole), the
 * quiet rows as saveQuietRuns writes them. Each rule's row is written here as when every event is
 * taken, the usual case, and stored as it is; only when some event was taken before are the rows'
 * runs unpacked and kept to the events taken here (a join of every run with the claims, and the
 * rows built again from them, were most of the statement's time: ~1 ms for 50 events of 10 rules).
 */
export async function claimQuietChunk(db: Executor, eventIds: number[], quiet: QuietRun[], now: number): Promise<void> {
  if (!eventIds.length) return;
  const rows = [...groupByRule(quiet)].map(([ruleId, list]) => ({
    ruleId,
    eventId: Math.max(...list.map((q) => q.eventId)),
    runs: JSON.stringify(list.map((q) => [q.eventId, q.leadId])),
    actions: JSON.stringify(list[0].results),
  }));
  // Its text is the same for any chunk: a named statement, parsed once per connection.
  const statement = sql`with taken as (
      insert into automation_claims (consumer, event_id, created_at)
      select 'rules', e, cast(${now} as bigint) from unnest(cast(${numberLiteral(eventIds)} as bigint[])) as e
      on conflict (consumer, event_id) do nothing returning event_id),
    v as (select * from unnest(cast(${numberLiteral(rows.map((r) => r.ruleId))} as bigint[]), cast(${numberLiteral(rows.map((r) => r.eventId))} as bigint[]),
        cast(${textLiteral(rows.map((r) => r.runs))} as text[]), cast(${textLiteral(rows.map((r) => r.actions))} as text[])) as v(rule_id, event_id, runs, actions)
      where v.rule_id in (${liveRules(
        db,
        rows.map((r) => r.ruleId),
      )}))
    insert into automation_quiet_runs (rule_id, event_id, at, runs, actions)
    select v.rule_id, v.event_id, cast(${now} as bigint), v.runs, v.actions from v
    where (select count(*) from taken) = ${eventIds.length}
    union all
    select v.rule_id, max((r.run->>0)::bigint), cast(${now} as bigint), json_agg(r.run order by r.n)::text, v.actions
    from v cross join lateral json_array_elements(cast(v.runs as json)) with ordinality as r(run, n)
    join taken on taken.event_id = (r.run->>0)::bigint
    where (select count(*) from taken) < ${eventIds.length}
    group by v.rule_id, v.actions`;
  await executeNamed(db, statement.compile(db));
}

/** Quiet runs by rule, each rule's in the order given. */
function groupByRule(quiet: QuietRun[]): Map<number, QuietRun[]> {
  const byRule = new Map<number, QuietRun[]>();
  for (const q of quiet) {
    const list = byRule.get(q.ruleId);
    if (list) list.push(q);
    else byRule.set(q.ruleId, [q]);
  }
  return byRule;
}

/**
 * The rules among `ruleIds` that still exist: a rule deleted after the batch read it runs no
 * more, and its runs are left out rather than failing the statement (the other rules' runs with
 * it). PostgreSQL locks them (key share) until the commit: a deletion under way is waited for and
 * its rule then left out, and one that comes later waits and removes the runs with the rule. Read
 * once per statement (a subquery per run row locked each rule once per run).
 */
function liveRules(db: Executor, ruleIds: number[]): RawBuilder<unknown> {
  const ids = [...new Set(ruleIds)];
  return dialectOf(db) === 'postgres'
    ? sql`select id from automation_rules where id = any(cast(${numberLiteral(ids)} as bigint[])) for key share`
    : sql`select id from automation_rules where id in (${sql.join(ids)})`;
}

/** Runs this transaction took and no longer wants (their rule no longer matches): as if never taken. */
export async function deleteRuns(db: Executor, ids: number[]): Promise<void> {
  if (ids.length) await db.deleteFrom('automation_runs').where('id', 'in', ids).execute();
}

/** Unfinished runs whose process stopped: resumed by whoever looks next. */
export async function staleRuns(db: Executor, now: number): Promise<AutomationRunRow[]> {
  return db.selectFrom('automation_runs').selectAll().where('done', '=', 0).where('claimed_until', '<', now).limit(100).execute();
}

export async function saveResults(db: Executor, runId: number, results: unknown[], done: boolean): Promise<void> {
  await db
    .updateTable('automation_runs')
    .set({ results: JSON.stringify(results), done: done ? 1 : 0 })
    .where('id', '=', runId)
    .execute();
}

/**
 * The progress of several runs in one statement: an update joined to a VALUES list (`case id
 * when ...` instead would compare each row with every run).
 */
export async function saveManyResults(db: Executor, runs: Array<{ id: number; results: unknown[]; done: boolean }>): Promise<void> {
  if (!runs.length) return;
  // The casts give PostgreSQL the parameters' types (VALUES leaves them text) and mean nothing to SQLite.
  const rows = runs.map(
    (r) => sql`(cast(${r.id} as bigint), cast(${JSON.stringify(r.results)} as text), cast(${r.done ? 1 : 0} as integer))`,
  );
  await sql`update automation_runs set results = v.column2, done = v.column3
    from (values ${sql.join(rows)}) as v where automation_runs.id = v.column1`.execute(db);
}

/**
 * The rule events an action can record: `setStatus` records `lead.changed.status`. No action
 * records `message.incoming`, `lead.created` or `lead.idle`, so those are never marked caused.
 */
export const CAUSABLE_EVENTS: readonly string[] = ['lead.changed.status'];

/**
 * Marks the lead's `lead.changed.status` events after `after` (those an action just recorded) so
 * that no rule reacts to them. Only that type: another transaction may commit an event of the lead
 * meanwhile without writing the lead row (the idle sweep's `lead.idle`), and a mark would lose it
 * to its rules; a `lead.changed.status` is recorded with a write of the lead row, which waits for
 * the caller's lock on it (PostgreSQL; SQLite has one writer), so only the caller's own are marked.
 */
export async function markCaused(db: Executor, leadId: number, after: number, now: number): Promise<void> {
  await db
    .insertInto('automation_claims')
    .columns(['consumer', 'event_id', 'created_at'])
    .expression((eb) =>
      eb
        .selectFrom('events')
        .select([sql.lit('caused').as('consumer'), 'id', sql.lit(now).as('created_at')])
        .where('lead_id', '=', leadId)
        .where('id', '>', after)
        .where('type', 'in', CAUSABLE_EVENTS),
    )
    .onConflict((oc) => oc.columns(['consumer', 'event_id']).doNothing())
    .execute();
}

/** The events among `ids` that rule actions caused (give only events of CAUSABLE_EVENTS types: no other is). */
export async function causedEvents(db: Executor, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await db
    .selectFrom('automation_claims')
    .select('event_id')
    .where('consumer', '=', 'caused')
    .where('event_id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => Number(r.event_id)));
}

/** Each customer's first lead (the lowest id), for `customer.isNew` of events that do not say. */
export async function firstLeadOfCustomers(db: Executor, customerIds: number[]): Promise<Map<number, number>> {
  if (!customerIds.length) return new Map();
  const rows = await db
    .selectFrom('leads')
    .select(['customer_id', (eb) => eb.fn.min<number>('id').as('first')])
    .where('customer_id', 'in', customerIds)
    .groupBy('customer_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.customer_id), Number(r.first)]));
}
