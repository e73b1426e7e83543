import type { Executor } from '../../db/database.js';
import type { AccountAutomationTable } from '../../db/schema.js';
import { ALWAYS_OPEN, type WorkingHours } from './working-hours.js';

export async function findAccountAutomation(db: Executor, accountId: number) {
  return db.selectFrom('account_automation').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

/** The account's working hours; open around the clock when it has none. */
export async function workingHoursOf(db: Executor, accountId: number): Promise<WorkingHours> {
  const row = await findAccountAutomation(db, accountId);
  return row?.working_hours ? (JSON.parse(row.working_hours) as WorkingHours) : ALWAYS_OPEN;
}

/**
 * What the first-response target and the reports read (docs/api/automation.md): the target in
 * minutes and the working hours, each null when the account has none.
 */
export async function responseSettingsOf(
  db: Executor,
  accountId: number,
): Promise<{ targetMinutes: number | null; hours: WorkingHours | null }> {
  const row = await findAccountAutomation(db, accountId);
  return {
    targetMinutes: row?.first_response_minutes ?? null,
    hours: row?.working_hours ? (JSON.parse(row.working_hours) as WorkingHours) : null,
  };
}

/** The account's first-response target in minutes; null when it has none. */
export async function firstResponseTargetOf(db: Executor, accountId: number): Promise<number | null> {
  return (await findAccountAutomation(db, accountId))?.first_response_minutes ?? null;
}

/** Sets the given columns, creating the account's row on first use. */
export async function saveAccountAutomation(
  db: Executor,
  accountId: number,
  patch: Partial<Pick<AccountAutomationTable, 'working_hours' | 'first_response_minutes'>>,
  now: number,
): Promise<void> {
  await db
    .insertInto('account_automation')
    .values({ account_id: accountId, working_hours: null, first_response_minutes: null, ...patch, updated_at: now })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ ...patch, updated_at: now }))
    .execute();
}
