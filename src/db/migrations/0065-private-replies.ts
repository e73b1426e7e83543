import type { ParleyMigration } from './helpers.js';

/**
 * Private replies to comments (Meta's private replies): Meta takes one per comment, so
 * Parley claims the comment here (unique per comment integration and comment id) before it asks
 * Meta, and a second private reply is refused without a provider call. `message_id` is the direct
 * message the reply became, once stored.
 */
export const privateReplies: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('private_replies'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('comment_id', 'text', (c) => c.notNull())
      .addColumn('message_id', bigint, (c) => c.references('messages.id').onDelete('set null'))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('private_replies_comment_uq')
      .on('private_replies')
      .columns(['integration_id', 'comment_id'])
      .unique()
      .execute();
  },
};
