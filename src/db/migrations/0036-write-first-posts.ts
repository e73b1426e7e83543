import type { ParleyMigration } from './helpers.js';

/**
 * `customId` of `POST /messaging/post` made idempotent across processes: a post with a customId
 * claims (integration, destination, customId) before it asks the channel; a repeat finds the claim
 * and answers the messages of the first call (or 409 while the first is still under way). Plain
 * sends to a lead are not covered here.
 */
export const writeFirstPosts: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('write_first_posts'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('custom_id', 'text', (c) => c.notNull())
      /** pending (the channel is being asked) | done */
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('lead_id', bigint)
      /** JSON array of the stored messages' ids, once done. */
      .addColumn('message_ids', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('write_first_posts_uq')
      .on('write_first_posts')
      .columns(['integration_id', 'destination', 'custom_id'])
      .unique()
      .execute();
  },
};
