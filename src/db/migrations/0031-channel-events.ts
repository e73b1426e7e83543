import type { ParleyMigration } from './helpers.js';

/**
 * Provider event ids already handled (VK `event_id`, OK `mid`), kept a week: a redelivered event is answered
 * at once, before anything is downloaded or asked again of the provider.
 */
export const channelEvents: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('channel_events')
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('channel_events_pk', ['integration_id', 'event_id'])
      .execute();
    await db.schema.createIndex('channel_events_created_idx').on('channel_events').column('created_at').execute();
  },
};
