import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { AccountRetentionTable } from '../../db/schema.js';

/** SQL of retention and account deletion. No rules here. */

export async function findRetention(db: Executor, accountId: number): Promise<AccountRetentionTable | undefined> {
  return db.selectFrom('account_retention').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

export async function upsertRetention(db: Executor, row: AccountRetentionTable): Promise<void> {
  await db
    .insertInto('account_retention')
    .values(row)
    .onConflict((oc) =>
      oc.column('account_id').doUpdateSet({ messages_days: row.messages_days, files_days: row.files_days, updated_at: row.updated_at }),
    )
    .execute();
}

/** Accounts that keep messages or files for a limited time. */
export async function limitedRetentions(db: Executor): Promise<AccountRetentionTable[]> {
  return db
    .selectFrom('account_retention')
    .selectAll()
    .where((eb) => eb.or([eb('messages_days', 'is not', null), eb('files_days', 'is not', null)]))
    .orderBy('account_id')
    .execute();
}

/** Deletes up to `limit` of the account's messages created before `before`; returns how many. */
export async function deleteMessagesBefore(db: Executor, accountId: number, before: number, limit: number): Promise<number> {
  const ids = await db
    .selectFrom('messages')
    .select('id')
    .where('account_id', '=', accountId)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return deleteMessages(
    db,
    ids.map((r) => Number(r.id)),
  );
}

async function deleteMessages(db: Executor, ids: number[]): Promise<number> {
  if (!ids.length) return 0;
  // A lead whose last message goes keeps its last_message_at; its preview has no message to show.
  await db.updateTable('leads').set({ last_message_id: null }).where('last_message_id', 'in', ids).execute();
  const result = await db.deleteFrom('messages').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The account's files created before `before` (at most `limit`), oldest first. */
export async function filesBefore(db: Executor, accountId: number, before: number, limit: number) {
  return db
    .selectFrom('files')
    .select(['id', 'storage_key'])
    .where('account_id', '=', accountId)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export async function deleteFileRows(db: Executor, accountId: number, ids: string[]): Promise<void> {
  if (ids.length) await db.deleteFrom('files').where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

/** A batch of the account's message ids, for deletion in steps. */
export async function someMessageIds(db: Executor, accountId: number, limit: number): Promise<number[]> {
  const rows = await db.selectFrom('messages').select('id').where('account_id', '=', accountId).orderBy('id').limit(limit).execute();
  return rows.map((r) => Number(r.id));
}

export async function deleteMessageIds(db: Executor, ids: number[]): Promise<number> {
  return deleteMessages(db, ids);
}

export async function countMessages(db: Executor, accountId: number): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Storage keys of everything the account keeps on disk: its files and its finished exports. */
export async function storageKeysOfAccount(db: Executor, accountId: number): Promise<string[]> {
  const files = await db.selectFrom('files').select('storage_key').where('account_id', '=', accountId).execute();
  const exports = await db
    .selectFrom('account_exports')
    .select('storage_key')
    .where('account_id', '=', accountId)
    .where('storage_key', 'is not', null)
    .execute();
  return [...files.map((r) => r.storage_key), ...exports.map((r) => r.storage_key ?? '')].filter((k) => k !== '');
}

/** Tables whose rows carry account_id: counted before deletion for the operator's report. */
export const ACCOUNT_TABLES = [
  'users',
  'refresh_tokens',
  'api_keys',
  'events',
  'integrations',
  'user_sources',
  'statuses',
  'payment_types',
  'tags',
  'lead_tags',
  'template_groups',
  'templates',
  'customers',
  'profiles',
  'sources',
  'leads',
  'messages',
  'invitations',
  'plugins',
  'files',
  'write_first_contacts',
  'webhooks',
  'widget_visitors',
  'account_imports',
  'account_exports',
  'account_migrations',
  'migration_ids',
  'account_retention',
  'private_replies',
] as const;

export async function countAccountRows(db: Executor, accountId: number): Promise<number> {
  let n = 0;
  for (const table of ACCOUNT_TABLES) {
    const r = await sql<{ n: number }>`select count(*) as n from ${sql.table(table)} where account_id = ${accountId}`.execute(db);
    n += Number(r.rows[0]?.n ?? 0);
  }
  return n;
}

/**
 * Deletes the account row; every table referencing it (directly or through its integrations,
 * webhooks, leads, visitors) follows by ON DELETE CASCADE. The import record has no foreign key
 * (it outlives nothing else), nor, on PostgreSQL, the events (migration 0073: a key checked at
 * every event written): they go by hand, the events with their deliveries.
 */
export async function deleteAccountRow(db: Executor, accountId: number): Promise<boolean> {
  await db.deleteFrom('account_imports').where('account_id', '=', accountId).execute();
  await db.deleteFrom('events').where('account_id', '=', accountId).execute();
  const r = await db.deleteFrom('accounts').where('id', '=', accountId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function accountExists(db: Executor, accountId: number): Promise<boolean> {
  return (await db.selectFrom('accounts').select('id').where('id', '=', accountId).executeTakeFirst()) !== undefined;
}
