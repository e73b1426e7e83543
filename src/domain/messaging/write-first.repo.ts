import type { Executor } from '../../db/database.js';
import type { MessageRow } from '../../db/schema.js';

/** SQL of the customId claims of write-first posts (migration 0036). */

export interface PostClaim {
  id: number;
  state: string;
  lead_id: number | null;
  message_ids: string | null;
}

/** Inserts a pending claim; a unique violation means another call holds (or held) it. */
export async function insertPostClaim(
  db: Executor,
  row: { accountId: number; integrationId: number; destination: string; customId: string; now: number },
): Promise<number> {
  const inserted = await db
    .insertInto('write_first_posts')
    .values({
      account_id: row.accountId,
      integration_id: row.integrationId,
      destination: row.destination,
      custom_id: row.customId,
      state: 'pending',
      created_at: row.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return inserted.id;
}

export async function findPostClaim(
  db: Executor,
  integrationId: number,
  destination: string,
  customId: string,
): Promise<PostClaim | undefined> {
  return db
    .selectFrom('write_first_posts')
    .select(['id', 'state', 'lead_id', 'message_ids'])
    .where('integration_id', '=', integrationId)
    .where('destination', '=', destination)
    .where('custom_id', '=', customId)
    .executeTakeFirst();
}

export async function completePostClaim(db: Executor, id: number, leadId: number, messageIds: number[]): Promise<void> {
  await db
    .updateTable('write_first_posts')
    .set({ state: 'done', lead_id: leadId, message_ids: JSON.stringify(messageIds) })
    .where('id', '=', id)
    .execute();
}

export async function deletePostClaim(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('write_first_posts').where('id', '=', id).where('state', '=', 'pending').execute();
}

export async function messagesByIds(db: Executor, ids: number[]): Promise<MessageRow[]> {
  if (!ids.length) return [];
  return db.selectFrom('messages').selectAll().where('id', 'in', ids).orderBy('id').execute();
}
