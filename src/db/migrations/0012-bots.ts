import type { ParleyMigration } from './helpers.js';

/**
 * Messenger bots (Telegram long polling): the next `getUpdates` offset of each integration, kept
 * after every update is committed, so a restart neither loses nor repeats updates.
 */
export const bots: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('bot_poll_offsets')
      .addColumn('integration_id', bigint, (c) => c.primaryKey().references('integrations.id').onDelete('cascade'))
      .addColumn('next_offset', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
  },
};
