import { sql, type Insertable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { MessagesTable } from '../../db/schema.js';

/** SQL of `parley migrate`: the run record, the id map and the upkeep of leads after their history. No rules here. */

export async function findRun(db: Executor, source: string, sourceAccountId: string) {
  return db
    .selectFrom('account_migrations')
    .selectAll()
    .where('source', '=', source)
    .where('source_account_id', '=', sourceAccountId)
    .executeTakeFirst();
}

export async function insertRun(db: Executor, row: { source: string; source_account_id: string; account_id: number; created_at: number }) {
  await db
    .insertInto('account_migrations')
    .values({ ...row, finished_at: null })
    .execute();
}

export async function finishRun(db: Executor, source: string, sourceAccountId: string, at: number) {
  await db
    .updateTable('account_migrations')
    .set({ finished_at: at })
    .where('source', '=', source)
    .where('source_account_id', '=', sourceAccountId)
    .execute();
}

export async function loadIds(db: Executor, accountId: number): Promise<Array<{ kind: string; source_id: string; target_id: string }>> {
  return db.selectFrom('migration_ids').select(['kind', 'source_id', 'target_id']).where('account_id', '=', accountId).execute();
}

export async function insertIds(db: Executor, rows: Array<{ account_id: number; kind: string; source_id: string; target_id: string }>) {
  for (let i = 0; i < rows.length; i += 2000)
    await db
      .insertInto('migration_ids')
      .values(rows.slice(i, i + 2000))
      .execute();
}

/** Messages already here among `externalIds` of one integration. */
export async function messagesByExternalId(db: Executor, integrationId: number, externalIds: string[]) {
  if (!externalIds.length) return [];
  return db
    .selectFrom('messages')
    .select(['id', 'external_id'])
    .where('integration_id', '=', integrationId)
    .where('external_id', 'in', externalIds)
    .execute();
}

/** Inserts messages in one statement; answers each new row's id with its unique key (integration, external id). */
export async function insertMessageRows(
  db: Executor,
  rows: Array<Insertable<MessagesTable> & { integration_id: number; external_id: string }>,
) {
  if (!rows.length) return [];
  return db.insertInto('messages').values(rows).returning(['id', 'integration_id', 'external_id']).execute();
}

/**
 * A lead's last message, unread marks and waiting time, from its messages: the newest message is
 * the last one; the `unread` newest incoming ones are unread; a lead whose customer has the last
 * word waits since the first incoming message after the last answer.
 */
export async function settleLead(db: Executor, leadId: number, unread: number): Promise<void> {
  const last = await db
    .selectFrom('messages')
    .select(['id', 'created_at', 'incoming'])
    .where('lead_id', '=', leadId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!last) return;
  await db.updateTable('messages').set({ unread: 0 }).where('lead_id', '=', leadId).where('unread', '=', 1).execute();
  if (unread > 0) {
    const newest = db
      .selectFrom('messages')
      .select('id')
      .where('lead_id', '=', leadId)
      .where('incoming', '=', 1)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(unread);
    await db.updateTable('messages').set({ unread: 1 }).where('id', 'in', newest).execute();
  }
  let awaitingSince: number | null = null;
  if (last.incoming) {
    const answered = await db
      .selectFrom('messages')
      .select(sql<number | null>`max(created_at)`.as('at'))
      .where('lead_id', '=', leadId)
      .where('incoming', '=', 0)
      .executeTakeFirst();
    const first = await db
      .selectFrom('messages')
      .select(sql<number | null>`min(created_at)`.as('at'))
      .where('lead_id', '=', leadId)
      .where('incoming', '=', 1)
      .where('created_at', '>', Number(answered?.at ?? -1))
      .executeTakeFirst();
    awaitingSince = first?.at === null || first?.at === undefined ? null : Number(first.at);
  }
  await db
    .updateTable('leads')
    .set({
      last_message_id: last.id,
      last_message_at: Number(last.created_at),
      last_message_incoming: last.incoming,
      awaiting_since: awaitingSince,
      unread_count: unread,
    })
    .where('id', '=', leadId)
    .execute();
}

/** Sets the tags of several leads: theirs are deleted and the given ones inserted, in few statements. */
export async function replaceLeadTags(db: Executor, accountId: number, leads: Array<{ leadId: number; tagIds: number[] }>, now: number) {
  if (!leads.length) return;
  await db
    .deleteFrom('lead_tags')
    .where(
      'lead_id',
      'in',
      leads.map((l) => l.leadId),
    )
    .execute();
  const rows = leads.flatMap((l) =>
    [...new Set(l.tagIds)].map((tag_id) => ({ account_id: accountId, lead_id: l.leadId, tag_id, created_at: now })),
  );
  for (let i = 0; i < rows.length; i += 1000)
    await db
      .insertInto('lead_tags')
      .values(rows.slice(i, i + 1000))
      .execute();
}

export async function tagsOf(db: Executor, accountId: number) {
  return db.selectFrom('tags').select(['id', 'tag_key']).where('account_id', '=', accountId).execute();
}

export async function usersByLogin(db: Executor, logins: string[]) {
  if (!logins.length) return [];
  return db.selectFrom('users').select(['id', 'account_id', 'login', 'role']).where('login', 'in', logins).execute();
}
