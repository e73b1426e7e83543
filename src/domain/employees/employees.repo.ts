import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { InvitationRow, LeadRow, LeadStatusType, UserRow } from '../../db/schema.js';

export async function listUsers(db: Executor, accountId: number): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

export interface SourceRecord {
  id: number;
  user_id: number;
  sa_id: number | null;
}

/** Access records of the account, or of one employee of it, in id order. */
export async function listSourceRecords(db: Executor, accountId: number, userId?: number): Promise<SourceRecord[]> {
  let query = db.selectFrom('user_sources').select(['id', 'user_id', 'sa_id']).where('account_id', '=', accountId);
  if (userId !== undefined) query = query.where('user_id', '=', userId);
  return query.orderBy('id').execute();
}

/** The ids among `ids` that are integrations of the account (not disconnected). */
export async function existingIntegrationIds(db: Executor, accountId: number, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await db
    .selectFrom('integrations')
    .select('id')
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .where('id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => r.id));
}

/**
 * Makes the employee's access records exactly `desired`. A desired record naming an existing record
 * id keeps that record (and its id); the others are inserted; existing records not kept are deleted.
 */
export async function replaceSources(
  trx: Executor,
  accountId: number,
  userId: number,
  desired: Array<{ id?: number; saId: number | null }>,
): Promise<void> {
  const existing = new Set((await listSourceRecords(trx, accountId, userId)).map((r) => r.id));
  const kept = new Set<number>();
  const inserts: Array<number | null> = [];
  for (const record of desired) {
    if (record.id !== undefined && existing.has(record.id) && !kept.has(record.id)) {
      kept.add(record.id);
      await trx.updateTable('user_sources').set({ sa_id: record.saId }).where('id', '=', record.id).execute();
    } else {
      inserts.push(record.saId);
    }
  }
  const stale = [...existing].filter((id) => !kept.has(id));
  if (stale.length) await trx.deleteFrom('user_sources').where('id', 'in', stale).execute();
  if (inserts.length) {
    await trx
      .insertInto('user_sources')
      .values(inserts.map((saId) => ({ account_id: accountId, user_id: userId, sa_id: saId })))
      .execute();
  }
}

export async function insertInvitation(
  trx: Executor,
  row: { account_id: number; user_id: number; token_hash: string; expires_at: number; created_at: number },
): Promise<void> {
  await trx
    .insertInto('invitations')
    .values({ ...row, used_at: null })
    .execute();
}

export async function findInvitationByHash(db: Executor, tokenHash: string): Promise<InvitationRow | undefined> {
  return db.selectFrom('invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the invitation used; false when it already was (a concurrent acceptance won). */
export async function markInvitationUsed(trx: Executor, id: number, now: number): Promise<boolean> {
  const result = await trx
    .updateTable('invitations')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Unassigns every lead of the employee; a lead without a status is (again) an inbox lead.
 * Returns the ids of the leads changed.
 */
/** Unassigns the employee's leads; answers them as they are afterwards, in id order. */
export async function unassignLeads(trx: Executor, accountId: number, userId: number, now: number): Promise<LeadRow[]> {
  const rows = await trx
    .updateTable('leads')
    .set({
      user_id: null,
      status_type: sql<LeadStatusType>`case when status_id is null then 'inbox' else status_type end`,
      updated_at: now,
    })
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .returningAll()
    .execute();
  return rows.sort((a, b) => a.id - b.id);
}

/** Removes `userId` from every `allowed_users` list of the account. */
export async function forgetAllowedUser(trx: Executor, accountId: number, userId: number): Promise<void> {
  const rows = await trx
    .selectFrom('users')
    .select(['id', 'allowed_users'])
    .where('account_id', '=', accountId)
    .where('allowed_users', 'is not', null)
    .execute();
  for (const row of rows) {
    const list: unknown = JSON.parse(row.allowed_users ?? '[]');
    if (!Array.isArray(list) || !list.includes(userId)) continue;
    await trx
      .updateTable('users')
      .set({ allowed_users: JSON.stringify(list.filter((id) => id !== userId)) })
      .where('id', '=', row.id)
      .execute();
  }
}

export async function deleteUser(trx: Executor, accountId: number, userId: number): Promise<void> {
  await trx.deleteFrom('users').where('id', '=', userId).where('account_id', '=', accountId).execute();
}
