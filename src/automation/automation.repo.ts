import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
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
