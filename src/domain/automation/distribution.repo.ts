import { sql } from 'kysely';
import { dialectOf, type Executor } from '../../db/database.js';
import { bigintArray as bigint, textArray as text } from '../../db/pg-arrays.js';
import type { LeadDistributionRow, LeadDistributionsTable } from '../../db/schema.js';

/** The integration's distribution, locked for the transaction on PostgreSQL (the rotation's position). */
export async function findDistribution(db: Executor, integrationId: number, lock = false): Promise<LeadDistributionRow | undefined> {
  let query = db.selectFrom('lead_distributions').selectAll().where('integration_id', '=', integrationId);
  if (lock && dialectOf(db) === 'postgres') query = query.forUpdate();
  return query.executeTakeFirst();
}

/** The integrations' distributions, locked for the transaction on PostgreSQL, in integration id order. */
export async function lockDistributions(db: Executor, integrationIds: number[]): Promise<LeadDistributionRow[]> {
  if (!integrationIds.length) return [];
  let query = db.selectFrom('lead_distributions').selectAll().where('integration_id', 'in', integrationIds).orderBy('integration_id');
  if (dialectOf(db) === 'postgres') query = query.forUpdate();
  return query.execute();
}

/**
 * PostgreSQL, one statement: leads assigned (`user_id`, `updated_at`), their distributions'
 * positions moved, and their `lead.changed` events inserted (payload texts given, in order) with
 * their accounts' active webhooks, as events/outbox.ts reads them with one event's insert.
 */
export async function assignLeads(
  db: Executor,
  p: {
    leads: Array<{ id: number; userId: number }>;
    positions: Array<{ integrationId: number; userId: number }>;
    events: Array<{ accountId: number; leadId: number; payload: string }>;
    now: number;
  },
): Promise<{ eventIds: number[]; hooks: Array<Array<{ id: number; events: string | null; api_version: string }>> }> {
  const { rows } = await sql<{ id: number; ord: number; webhook_id: number | null; events: string | null; api_version: string | null }>`
    with l as (
      update leads set user_id = v.user_id, updated_at = ${p.now}::bigint
      from unnest(${bigint(p.leads.map((x) => x.id))}, ${bigint(p.leads.map((x) => x.userId))}) as v(id, user_id)
      where leads.id = v.id
      returning leads.id
    ), d as (
      update lead_distributions set last_user_id = v.user_id
      from unnest(${bigint(p.positions.map((x) => x.integrationId))}, ${bigint(p.positions.map((x) => x.userId))}) as v(integration_id, user_id)
      where lead_distributions.integration_id = v.integration_id
      returning lead_distributions.integration_id
    ), ev as (
      select nextval((select pg_get_serial_sequence('events', 'id')::regclass)) as id, v.*
      from unnest(${bigint(p.events.map((x) => x.accountId))}, ${bigint(p.events.map((x) => x.leadId))}, ${text(p.events.map((x) => x.payload))})
        with ordinality as v(account_id, lead_id, payload, ord)
    ), e as (
      insert into events (id, account_id, type, lead_id, payload, created_at)
      select id, account_id, 'lead.changed', lead_id, payload, ${p.now}::bigint from ev
      returning id
    )
    select ev.id, ev.ord::int as ord, (select count(*) from l)::int as leads, (select count(*) from d)::int as moved,
      (select count(*) from e)::int as inserted, w.id as webhook_id, w.events, w.api_version
    from ev left join webhooks w on w.account_id = ev.account_id and w.status = 1
    order by ev.ord`.execute(db);
  const eventIds = new Array<number>(p.events.length);
  const hooks = p.events.map(() => [] as Array<{ id: number; events: string | null; api_version: string }>);
  for (const row of rows) {
    eventIds[row.ord - 1] = Number(row.id);
    if (row.webhook_id !== null)
      hooks[row.ord - 1].push({ id: row.webhook_id, events: row.events, api_version: row.api_version as string });
  }
  return { eventIds, hooks };
}

export async function saveDistribution(db: Executor, row: LeadDistributionsTable): Promise<void> {
  await db
    .insertInto('lead_distributions')
    .values(row)
    .onConflict((oc) =>
      oc.column('integration_id').doUpdateSet({
        mode: row.mode,
        employees: row.employees,
        only_available: row.only_available,
        updated_at: row.updated_at,
      }),
    )
    .execute();
}

export async function movePosition(db: Executor, integrationId: number, userId: number): Promise<void> {
  await db.updateTable('lead_distributions').set({ last_user_id: userId }).where('integration_id', '=', integrationId).execute();
}

/**
 * The confirmed employees of the account who reach the integration (no access records: every
 * integration; otherwise a record naming it), with their availability, in id order.
 */
export async function employeesReaching(
  db: Executor,
  accountId: number,
  integrationId: number,
): Promise<Array<{ id: number; available: number }>> {
  return db
    .selectFrom('users as u')
    .select(['u.id', 'u.available'])
    .where('u.account_id', '=', accountId)
    .where('u.confirmed', '=', 1)
    .where(({ or, not, exists, selectFrom }) =>
      or([
        not(exists(selectFrom('user_sources as s').select(sql.lit(1).as('one')).whereRef('s.user_id', '=', 'u.id'))),
        exists(
          selectFrom('user_sources as s')
            .select(sql.lit(1).as('one'))
            .whereRef('s.user_id', '=', 'u.id')
            .where('s.sa_id', '=', integrationId),
        ),
      ]),
    )
    .orderBy('u.id')
    .execute();
}

/** Open leads (inbox and active statuses) per employee among `userIds`. */
export async function openLeadCounts(db: Executor, accountId: number, userIds: number[]): Promise<Map<number, number>> {
  if (!userIds.length) return new Map();
  const rows = await db
    .selectFrom('leads')
    .select(['user_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('account_id', '=', accountId)
    .where('user_id', 'in', userIds)
    .where('status_type', 'in', ['inbox', 'active'])
    .groupBy('user_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.user_id), Number(r.n)]));
}

/** Claims an event for a consumer; false when it was claimed before (here or in another process). */
export async function claimEvent(db: Executor, consumer: string, eventId: number, now: number): Promise<boolean> {
  const rows = await db
    .insertInto('automation_claims')
    .values({ consumer, event_id: eventId, created_at: now })
    .onConflict((oc) => oc.columns(['consumer', 'event_id']).doNothing())
    .returning('event_id')
    .execute();
  return rows.length > 0;
}

/**
 * Takes several events for `consumer` in one statement, in the caller's transaction: answers the
 * ids taken now (an event taken before, or by another process, is left out; on PostgreSQL the
 * insert waits for another transaction's uncommitted claim).
 */
export async function claimEvents(db: Executor, consumer: string, eventIds: number[], now: number): Promise<Set<number>> {
  if (!eventIds.length) return new Set();
  const rows = await db
    .insertInto('automation_claims')
    .values(eventIds.map((id) => ({ consumer, event_id: id, created_at: now })))
    .onConflict((oc) => oc.columns(['consumer', 'event_id']).doNothing())
    .returning('event_id')
    .execute();
  return new Set(rows.map((r) => Number(r.event_id)));
}
