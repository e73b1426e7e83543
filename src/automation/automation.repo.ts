import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
import { bigintArray, textArray } from '../db/pg-arrays.js';
import { prepared } from '../db/prepared.js';
import type { LeadRow } from '../db/schema.js';

const CURSOR = 'automation';

/** Where the consumer left off; on the first start of an installation, the newest event. */
export async function resumeCursor(db: Executor, newest: () => Promise<number>): Promise<number> {
  const row = await db.selectFrom('automation_cursors').select('event_id').where('name', '=', CURSOR).executeTakeFirst();
  if (row) return Number(row.event_id);
  const start = await newest();
  await db
    .insertInto('automation_cursors')
    .values({ name: CURSOR, event_id: start })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  return start;
}

/** Moves the kept place forward (never back: several processes write it). */
export async function saveCursor(db: Executor, eventId: number): Promise<void> {
  const greatest = dialectOf(db) === 'postgres' ? sql`greatest(event_id, ${eventId})` : sql`max(event_id, ${eventId})`;
  await db
    .updateTable('automation_cursors')
    .set({ event_id: sql<number>`${greatest}` })
    .where('name', '=', CURSOR)
    .execute();
}

/** The events rules react to (lead.idle is recorded by the idle sweep for its rule). */
export const RULE_EVENTS = ['message.incoming', 'lead.created', 'lead.changed.status', 'lead.idle'];

/** Prepared (named on PostgreSQL): every process asks it at every read of the consumer. */
const idleCheck = prepared((db) =>
  db.selectNoFrom((eb) => [
    eb
      .selectFrom('events')
      .select((e) => e.fn.max('id').as('id'))
      .as('newest'),
    eb.exists(eb.selectFrom('automation_rules').select('id').where('enabled', '=', 1).where('event', 'in', RULE_EVENTS)).as('rules'),
    eb.exists(eb.selectFrom('lead_distributions').select('integration_id').where('mode', '!=', 'off')).as('distributing'),
  ]),
);

/**
 * The newest event id when automation has nothing to do for any event (no enabled rule of
 * {@link RULE_EVENTS}, no integration distributing new leads), else undefined. One statement, so
 * one snapshot: the events it covers were committed before any rule or distribution it did not see.
 */
export async function newestWhenIdle(db: Executor): Promise<number | undefined> {
  const [row] = await idleCheck(db, {});
  if (!row || row.rules || row.distributing) return undefined;
  return row.newest == null ? 0 : Number(row.newest);
}

/** Of these leads, the ones whose integration distributes new leads. */
export async function leadsToDistribute(db: Executor, leadIds: number[]): Promise<LeadRow[]> {
  if (!leadIds.length) return [];
  return db
    .selectFrom('leads as l')
    .innerJoin('lead_distributions as d', 'd.integration_id', 'l.integration_id')
    .selectAll('l')
    .where('l.id', 'in', leadIds)
    .where('d.mode', '!=', 'off')
    .where('l.user_id', 'is', null)
    .execute();
}

/**
 * PostgreSQL, one statement: tags attached to leads (as leads.repo.ts `attachTags`), each lead that gained
 * one updated (`updated_at`), and for each such lead its event (`lead.changed`, payload texts
 * given, one per lead in `events` order) inserted with its account's active webhooks. Answers the
 * events inserted: their ids, webhooks and places (1-based) in `events`.
 */
export async function attachTagsRecording(
  db: Executor,
  p: {
    tags: Array<{ accountId: number; leadId: number; tagId: number }>;
    events: Array<{ accountId: number; leadId: number; payload: string }>;
    now: number;
  },
): Promise<{ eventIds: number[]; hooks: Array<Array<{ id: number; events: string | null; api_version: string }>>; ords: number[] }> {
  const { rows } = await sql<{ id: number; ord: number; webhook_id: number | null; events: string | null; api_version: string | null }>`
    with t as (
      insert into lead_tags (account_id, lead_id, tag_id, created_at)
      select v.account_id, v.lead_id, v.tag_id, ${p.now}::bigint
      from unnest(${bigintArray(p.tags.map((x) => x.accountId))}, ${bigintArray(p.tags.map((x) => x.leadId))},
        ${bigintArray(p.tags.map((x) => x.tagId))}) as v(account_id, lead_id, tag_id)
      on conflict (lead_id, tag_id) do nothing
      returning lead_id
    ), l as (
      update leads set updated_at = ${p.now}::bigint where id in (select lead_id from t) returning id
    ), ev as (
      select nextval((select pg_get_serial_sequence('events', 'id')::regclass)) as id, v.*
      from unnest(${bigintArray(p.events.map((x) => x.accountId))}, ${bigintArray(p.events.map((x) => x.leadId))},
        ${textArray(p.events.map((x) => x.payload))}) with ordinality as v(account_id, lead_id, payload, ord)
      where v.lead_id in (select id from l)
    ), e as (
      insert into events (id, account_id, type, lead_id, payload, created_at)
      select id, account_id, 'lead.changed', lead_id, payload, ${p.now}::bigint from ev
      returning id
    )
    select ev.id, ev.ord::int as ord, (select count(*) from e)::int as inserted, w.id as webhook_id, w.events, w.api_version
    from ev left join webhooks w on w.account_id = ev.account_id and w.status = 1
    order by ev.ord`.execute(db);
  const ords: number[] = [];
  const eventIds: number[] = [];
  const hooks: Array<Array<{ id: number; events: string | null; api_version: string }>> = [];
  for (const row of rows) {
    if (ords[ords.length - 1] !== row.ord) {
      ords.push(row.ord);
      eventIds.push(Number(row.id));
      hooks.push([]);
    }
    if (row.webhook_id !== null)
      hooks[hooks.length - 1].push({ id: row.webhook_id, events: row.events, api_version: row.api_version as string });
  }
  return { eventIds, hooks, ords };
}
