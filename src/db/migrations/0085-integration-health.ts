import type { ParleyMigration } from './helpers.js';

/**
 * The health of each integration (docs/api/integrations.md "Health"): its last error, kept on the
 * integration's row (written only when something fails or recovers), and when it last received and
 * sent a message, kept apart in `integration_activity` so that the message paths never write the
 * integrations' rows (whose changes are announced to every process).
 */
export const integrationHealth: ParleyMigration = {
  async up(db, kit) {
    await db.schema.alterTable('integrations').addColumn('last_error_at', kit.bigint).execute();
    await db.schema.alterTable('integrations').addColumn('last_error', 'text').execute();
    await db.schema.alterTable('integrations').addColumn('last_error_code', 'text').execute();
    await db.schema
      .createTable('integration_activity')
      .addColumn('integration_id', kit.bigint, (c) => c.primaryKey().references('integrations.id').onDelete('cascade'))
      .addColumn('last_inbound_at', kit.bigint)
      .addColumn('last_outbound_at', kit.bigint)
      .execute();
  },
};
