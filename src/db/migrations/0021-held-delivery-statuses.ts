import type { ParleyMigration } from './helpers.js';

/**
 * Delivery reports that arrived before the outgoing message they describe was stored (the provider
 * may report `sent` while Parley is still committing the send): held here, applied when the
 * message is stored, pruned after a while (reports of messages sent by other tools never match).
 */
export const heldDeliveryStatuses: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('held_delivery_statuses')
      .addColumn('integration_id', kit.bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('external_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('error', 'text')
      .addColumn('created_at', kit.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('held_delivery_statuses_pk', ['integration_id', 'external_id', 'status'])
      .execute();
  },
};
