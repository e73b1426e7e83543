import type { Executor } from '../../db/database.js';
import type { AutomationRuleRow, AutomationRulesTable } from '../../db/schema.js';
import type { Insertable } from 'kysely';

export async function listRules(db: Executor, accountId: number): Promise<AutomationRuleRow[]> {
  return db.selectFrom('automation_rules').selectAll().where('account_id', '=', accountId).orderBy('position').orderBy('id').execute();
}

export async function findRule(db: Executor, accountId: number, id: number): Promise<AutomationRuleRow | undefined> {
  return db.selectFrom('automation_rules').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function countRules(db: Executor, accountId: number): Promise<number> {
  const row = await db
    .selectFrom('automation_rules')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertRule(db: Executor, rule: Insertable<AutomationRulesTable>): Promise<AutomationRuleRow> {
  return db.insertInto('automation_rules').values(rule).returningAll().executeTakeFirstOrThrow();
}

export async function updateRule(
  db: Executor,
  accountId: number,
  id: number,
  patch: Partial<Insertable<AutomationRulesTable>>,
): Promise<AutomationRuleRow | undefined> {
  return db
    .updateTable('automation_rules')
    .set(patch)
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteRule(db: Executor, accountId: number, id: number): Promise<boolean> {
  const r = await db.deleteFrom('automation_rules').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** A run of a rule as the runs API answers it. */
export interface RecentRun {
  eventId: number;
  leadId: number | null;
  at: number;
  results: string;
}

/**
 * The rule's latest runs by event, newest first: its run rows and its quiet runs (migration 0140),
 * each of whose rows holds at least one run, so `limit` rows of each are enough.
 */
export async function recentRuns(db: Executor, ruleId: number, limit: number): Promise<RecentRun[]> {
  const rows = await db
    .selectFrom('automation_runs')
    .select(['event_id', 'lead_id', 'at', 'results'])
    .where('rule_id', '=', ruleId)
    .orderBy('event_id', 'desc')
    .limit(limit)
    .execute();
  const quiet = await db
    .selectFrom('automation_quiet_runs')
    .select(['runs', 'at', 'actions'])
    .where('rule_id', '=', ruleId)
    .orderBy('event_id', 'desc')
    .limit(limit)
    .execute();
  const all: RecentRun[] = rows.map((r) => ({
    eventId: Number(r.event_id),
    leadId: r.lead_id === null ? null : Number(r.lead_id),
    at: Number(r.at),
    results: r.results,
  }));
  for (const q of quiet) {
    for (const [eventId, leadId] of JSON.parse(q.runs) as Array<[number, number | null]>) {
      all.push({ eventId, leadId, at: Number(q.at), results: q.actions });
    }
  }
  return all.sort((a, b) => b.eventId - a.eventId).slice(0, limit);
}

/** The enabled rules of these accounts for these events, in their order. */
export async function enabledRules(db: Executor, accountIds: number[], events: string[]): Promise<AutomationRuleRow[]> {
  if (!accountIds.length) return [];
  return db
    .selectFrom('automation_rules')
    .selectAll()
    .where('account_id', 'in', accountIds)
    .where('enabled', '=', 1)
    .where('event', 'in', events)
    .orderBy('account_id')
    .orderBy('position')
    .orderBy('id')
    .execute();
}

/** Runs of the rules older than `cutoff`, in one batch; answers how many were deleted. */
export async function pruneRuns(db: Executor, cutoff: number, batch: number): Promise<number> {
  const r = await db
    .deleteFrom('automation_runs')
    .where('id', 'in', (eb) => eb.selectFrom('automation_runs').select('id').where('at', '<', cutoff).orderBy('id').limit(batch))
    .executeTakeFirst();
  await db.deleteFrom('automation_quiet_runs').where('at', '<', cutoff).execute();
  await db.deleteFrom('automation_claims').where('created_at', '<', cutoff).execute();
  return Number(r.numDeletedRows);
}

/** The statuses among `ids` that are the account's. */
export async function accountStatusIds(db: Executor, accountId: number, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await db.selectFrom('statuses').select('id').where('account_id', '=', accountId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/** The confirmed employees among `ids` that are the account's. */
export async function confirmedEmployeeIds(db: Executor, accountId: number, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('account_id', '=', accountId)
    .where('confirmed', '=', 1)
    .where('id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => r.id));
}
