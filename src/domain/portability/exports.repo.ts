import type { Executor } from '../../db/database.js';
import type { AccountExportRow, AccountExportsTable } from '../../db/schema.js';
import type { Updateable } from 'kysely';

/** SQL of account export jobs. No rules here. */

export async function insertExport(
  db: Executor,
  row: { account_id: number; user_id: number; created_at: number },
): Promise<AccountExportRow> {
  return db.insertInto('account_exports').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findExport(db: Executor, accountId: number, id: number): Promise<AccountExportRow | undefined> {
  return db.selectFrom('account_exports').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function listExports(db: Executor, accountId: number, limit: number): Promise<AccountExportRow[]> {
  return db.selectFrom('account_exports').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc').limit(limit).execute();
}

export async function activeExport(db: Executor, accountId: number): Promise<AccountExportRow | undefined> {
  return db
    .selectFrom('account_exports')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirst();
}

/**
 * Claims the oldest job waiting (or whose worker's lease ran out) for `leaseMs`: a conditional
 * update, so of several workers one wins.
 */
export async function claimExport(db: Executor, now: number, leaseMs: number): Promise<AccountExportRow | undefined> {
  const candidate = await db
    .selectFrom('account_exports')
    .select(['id', 'status', 'lease_until'])
    .where((eb) => eb.or([eb('status', '=', 'queued'), eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)])]))
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  if (!candidate) return undefined;
  const claimed = await db
    .updateTable('account_exports')
    .set({ status: 'running', lease_until: now + leaseMs, done: 0 })
    .where('id', '=', candidate.id)
    .where('status', '=', candidate.status)
    .where((eb) => (candidate.lease_until === null ? eb('lease_until', 'is', null) : eb('lease_until', '=', candidate.lease_until)))
    .returningAll()
    .executeTakeFirst();
  return claimed;
}

export async function updateExport(db: Executor, id: number, patch: Updateable<AccountExportsTable>): Promise<void> {
  await db.updateTable('account_exports').set(patch).where('id', '=', id).execute();
}

/** Finished exports past their expiry that still hold a stored archive. */
export async function expiredExports(db: Executor, now: number): Promise<AccountExportRow[]> {
  return db.selectFrom('account_exports').selectAll().where('status', '=', 'ready').where('expires_at', '<', now).limit(100).execute();
}
