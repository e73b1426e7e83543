import type { Executor } from '../../db/database.js';
import type { PluginRow } from '../../db/schema.js';

export async function insertPlugin(
  db: Executor,
  row: { account_id: number; type: string; name: string; metadata: string; token_hash: string; created_at: number },
): Promise<PluginRow> {
  return db
    .insertInto('plugins')
    .values({ ...row, status: 'active', revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The account's plugins that still work; deleted ones are kept (revoked) but no longer listed. */
export async function listPlugins(db: Executor, accountId: number): Promise<PluginRow[]> {
  return db.selectFrom('plugins').selectAll().where('account_id', '=', accountId).where('revoked_at', 'is', null).orderBy('id').execute();
}

export async function findPluginByTokenHash(db: Executor, tokenHash: string): Promise<PluginRow | undefined> {
  return db.selectFrom('plugins').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Whether the plugin exists in the account and has not been deleted (checked on every plugin request). */
export async function isPluginActive(db: Executor, accountId: number, id: number | undefined): Promise<boolean> {
  if (id === undefined) return false;
  const row = await db
    .selectFrom('plugins')
    .select('id')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** Revokes one plugin of the account; false when there is no such active plugin. */
export async function revokePlugin(db: Executor, accountId: number, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('plugins')
    .set({ revoked_at: now, status: 'revoked' })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
