import type { Executor } from '../../db/database.js';
import type { LeadRow } from '../../db/schema.js';
import type { Insertable } from 'kysely';
import type { StatusesTable } from '../../db/schema.js';
import type { StatusRow, StatusType } from './statuses.types.js';

export async function listStatuses(db: Executor, accountId: number, type?: StatusType): Promise<StatusRow[]> {
  let query = db.selectFrom('statuses').selectAll().where('account_id', '=', accountId);
  if (type) query = query.where('type', '=', type);
  return query.orderBy('position').orderBy('id').execute();
}

/** Scoped by account: an id of another account finds nothing. */
export async function findStatus(db: Executor, accountId: number, id: number): Promise<StatusRow | undefined> {
  return db.selectFrom('statuses').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findStatusesByIds(db: Executor, accountId: number, ids: number[]): Promise<StatusRow[]> {
  if (!ids.length) return [];
  return db.selectFrom('statuses').selectAll().where('account_id', '=', accountId).where('id', 'in', ids).execute();
}

/** The first status of a type (lowest order, then lowest id): where accepted leads and orphans go. */
export async function firstStatusOfType(
  db: Executor,
  accountId: number,
  type: StatusType,
  exceptId?: number,
): Promise<StatusRow | undefined> {
  let query = db.selectFrom('statuses').selectAll().where('account_id', '=', accountId).where('type', '=', type);
  if (exceptId !== undefined) query = query.where('id', '!=', exceptId);
  return query.orderBy('position').orderBy('id').limit(1).executeTakeFirst();
}

export async function maxPosition(db: Executor, accountId: number, type: StatusType): Promise<number | null> {
  const row = await db
    .selectFrom('statuses')
    .select((eb) => eb.fn.max('position').as('max'))
    .where('account_id', '=', accountId)
    .where('type', '=', type)
    .executeTakeFirst();
  return row?.max ?? null;
}

export async function insertStatus(
  db: Executor,
  row: { account_id: number; name: string; type: StatusType; position: number; color: string; created_at: number },
): Promise<StatusRow> {
  return db.insertInto('statuses').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateStatus(
  db: Executor,
  accountId: number,
  id: number,
  patch: { name?: string; color?: string; position?: number },
): Promise<void> {
  await db.updateTable('statuses').set(patch).where('id', '=', id).where('account_id', '=', accountId).execute();
}

export async function deleteStatus(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('statuses').where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** Ids of the leads in a status, ascending. */
export async function leadsInStatus(db: Executor, accountId: number, statusId: number): Promise<LeadRow[]> {
  return db.selectFrom('leads').selectAll().where('account_id', '=', accountId).where('status_id', '=', statusId).orderBy('id').execute();
}

/** Moves every lead of one status to another (or to the inbox); status_id and status_type together. */
export async function moveLeadsOfStatus(
  db: Executor,
  accountId: number,
  fromStatusId: number,
  to: { statusId: number | null; statusType: 'inbox' | StatusType },
  now: number,
): Promise<LeadRow[]> {
  const rows = await db
    .updateTable('leads')
    .set({ status_id: to.statusId, status_type: to.statusType, updated_at: now })
    .where('account_id', '=', accountId)
    .where('status_id', '=', fromStatusId)
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.id - b.id);
}

/** Several statuses at once (an account's defaults). */
export async function insertStatuses(db: Executor, rows: Insertable<StatusesTable>[]): Promise<void> {
  await db.insertInto('statuses').values(rows).execute();
}
