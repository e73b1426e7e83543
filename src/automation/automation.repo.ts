import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
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
