import type { ParleyMigration } from './helpers.js';

/**
 * Delivery status of outgoing messages, as channels that report it tell (WhatsApp Cloud API:
 * sent, delivered, read, failed): the furthest status reached, and the provider's reason when the
 * delivery failed (JSON `{code, title, message}`). Null for incoming messages and for channels
 * that report nothing.
 */
export const deliveryStatus: ParleyMigration = {
  async up(db) {
    await db.schema.alterTable('messages').addColumn('delivery_status', 'text').execute();
    await db.schema.alterTable('messages').addColumn('delivery_error', 'text').execute();
  },
};
