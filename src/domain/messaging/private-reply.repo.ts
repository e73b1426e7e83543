import type { Executor } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { IntegrationRow, MessageRow, ProfileRow } from '../../db/schema.js';

/** The customer's latest comment on a comment channel of a lead: what an answer there replies to. */
export function latestIncoming(db: Executor, leadId: number, sourceId: number): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('lead_id', '=', leadId)
    .where('source_id', '=', sourceId)
    .where('incoming', '=', 1)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** Claims the comment's one private reply: false when it was claimed (answered) before. */
export async function claimPrivateReply(
  db: Executor,
  row: { accountId: number; integrationId: number; commentId: string; now: number },
): Promise<boolean> {
  try {
    await db
      .insertInto('private_replies')
      .values({
        account_id: row.accountId,
        integration_id: row.integrationId,
        comment_id: row.commentId,
        message_id: null,
        created_at: row.now,
      })
      .execute();
    return true;
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

export async function releasePrivateReply(db: Executor, integrationId: number, commentId: string): Promise<void> {
  await db
    .deleteFrom('private_replies')
    .where('integration_id', '=', integrationId)
    .where('comment_id', '=', commentId)
    .where('message_id', 'is', null)
    .execute();
}

export async function settlePrivateReply(db: Executor, integrationId: number, commentId: string, messageId: number): Promise<void> {
  await db
    .updateTable('private_replies')
    .set({ message_id: messageId })
    .where('integration_id', '=', integrationId)
    .where('comment_id', '=', commentId)
    .execute();
}

/** A profile of the customer on another integration (the comment author's direct-message id). */
export function insertLinkedProfile(
  db: Executor,
  like: ProfileRow,
  integration: IntegrationRow,
  socialId: string,
  now: number,
): Promise<ProfileRow> {
  return db
    .insertInto('profiles')
    .values({
      account_id: integration.account_id,
      customer_id: like.customer_id,
      integration_id: integration.id,
      type: integration.type,
      social_id: socialId,
      login: like.login,
      name: like.name,
      avatar: like.avatar,
      profile_url: '',
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}
