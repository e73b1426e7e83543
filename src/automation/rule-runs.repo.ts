import { sql } from 'kysely';
import type { Executor } from '../db/database.js';
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

/** Marks the lead's events after `after` (those an action just recorded) so that no rule reacts to them. */
export async function markCaused(db: Executor, leadId: number, after: number, now: number): Promise<void> {
  await db
    .insertInto('automation_claims')
    .columns(['consumer', 'event_id', 'created_at'])
    .expression((eb) =>
      eb
        .selectFrom('events')
        .select([sql.lit('caused').as('consumer'), 'id', sql.lit(now).as('created_at')])
        .where('lead_id', '=', leadId)
        .where('id', '>', after),
    )
    .onConflict((oc) => oc.columns(['consumer', 'event_id']).doNothing())
    .execute();
}

/** The events among `ids` that rule actions caused. */
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

/** Whether the customer has a lead older than this one. */
export async function customerHasEarlierLead(db: Executor, customerId: number, leadId: number): Promise<boolean> {
  const row = await db
    .selectFrom('leads')
    .select('id')
    .where('customer_id', '=', customerId)
    .where('id', '<', leadId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
