import type { Executor } from '../../db/database.js';
import type { TemplateGroupRow, TemplateRow } from './templates.types.js';

export async function listGroups(db: Executor, accountId: number): Promise<TemplateGroupRow[]> {
  return db.selectFrom('template_groups').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

export async function findGroup(db: Executor, accountId: number, id: number): Promise<TemplateGroupRow | undefined> {
  return db.selectFrom('template_groups').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findGroupByKey(db: Executor, accountId: number, key: string): Promise<TemplateGroupRow | undefined> {
  return db.selectFrom('template_groups').selectAll().where('key', '=', key).where('account_id', '=', accountId).executeTakeFirst();
}

export async function insertGroup(db: Executor, accountId: number, key: string, now: number): Promise<TemplateGroupRow> {
  return db.insertInto('template_groups').values({ account_id: accountId, key, created_at: now }).returningAll().executeTakeFirstOrThrow();
}

export async function renameGroup(db: Executor, accountId: number, id: number, key: string): Promise<void> {
  await db.updateTable('template_groups').set({ key }).where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** Deletes the group's phrases, then the group (explicitly: both dialects, whatever the FK does). */
export async function deleteGroup(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('templates').where('group_id', '=', id).where('account_id', '=', accountId).execute();
  await db.deleteFrom('template_groups').where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** Phrases a user sees: shared ones (user_id null) and its own personal ones. */
export async function listVisiblePhrases(db: Executor, accountId: number, userId: number, groupId?: number): Promise<TemplateRow[]> {
  let query = db
    .selectFrom('templates')
    .selectAll()
    .where('account_id', '=', accountId)
    .where((eb) => eb.or([eb('user_id', 'is', null), eb('user_id', '=', userId)]));
  if (groupId !== undefined) query = query.where('group_id', '=', groupId);
  return query.orderBy('id').execute();
}

export async function findPhrase(db: Executor, accountId: number, groupId: number, id: number): Promise<TemplateRow | undefined> {
  return db
    .selectFrom('templates')
    .selectAll()
    .where('id', '=', id)
    .where('group_id', '=', groupId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
}

export async function insertPhrase(
  db: Executor,
  row: { account_id: number; group_id: number; template: string; hotkey: string; user_id: number | null; created_at: number },
): Promise<TemplateRow> {
  return db.insertInto('templates').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updatePhrase(
  db: Executor,
  accountId: number,
  id: number,
  patch: { template: string; hotkey: string; user_id: number | null },
): Promise<void> {
  await db.updateTable('templates').set(patch).where('id', '=', id).where('account_id', '=', accountId).execute();
}

export async function deletePhrase(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('templates').where('id', '=', id).where('account_id', '=', accountId).execute();
}
