import type { Db, Executor } from '../../db/database.js';

/**
 * Serializes the account's list edits (statuses, payment types, reply templates) so that the
 * "name already taken" check and the write that follows cannot interleave with another request's.
 * SQLite runs one write transaction at a time already; on PostgreSQL the account row is locked for
 * the rest of the transaction.
 */
export async function lockAccountLists(trx: Executor, dialect: Db['dialect'], accountId: number): Promise<void> {
  if (dialect !== 'postgres') return;
  await trx.selectFrom('accounts').select('id').where('id', '=', accountId).forUpdate().execute();
}
