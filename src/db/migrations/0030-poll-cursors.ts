import type { ParleyMigration } from './helpers.js';

/**
 * Long-polling cursors that are not integers (VK Bots Long Poll `ts`, OK `marker`): the position
 * after the last batch committed, per integration, so a restart neither loses nor re-reads events
 * beyond that batch. Telegram's integer offsets stay in `bot_poll_offsets`.
 */
export const pollCursors: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('channel_poll_cursors')
      .addColumn('integration_id', bigint, (c) => c.primaryKey().references('integrations.id').onDelete('cascade'))
      .addColumn('cursor', 'text', (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
  },
};
