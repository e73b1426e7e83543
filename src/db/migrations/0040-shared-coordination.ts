import type { ParleyMigration } from './helpers.js';

/**
 * What several processes on one PostgreSQL database must agree on:
 * - `rate_limits`: fixed-window counters by key, so a limit holds across processes;
 * - `send_keys`: one row per (lead, customId) of a send under way or done — the unique key is
 *   what stops two processes from sending the same idempotent message twice;
 * - `leases`: named leases with an expiry (one Telegram poller per bot across processes).
 * SQLite gets the same tables (one schema for both dialects; there they stay small or unused).
 */
export const sharedCoordination: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('rate_limits')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('count', 'integer', (c) => c.notNull())
      .addColumn('reset_at', kit.bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('rate_limits_reset_idx').on('rate_limits').column('reset_at').execute();
    await db.schema
      .createTable('send_keys')
      .addColumn('lead_id', kit.bigint, (c) => c.notNull().references('leads.id').onDelete('cascade'))
      .addColumn('custom_id', 'text', (c) => c.notNull())
      .addColumn('claimed_until', kit.bigint, (c) => c.notNull())
      .addColumn('created_at', kit.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('send_keys_pk', ['lead_id', 'custom_id'])
      .execute();
    await db.schema
      .createTable('leases')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('holder', 'text', (c) => c.notNull())
      .addColumn('expires_at', kit.bigint, (c) => c.notNull())
      .execute();
  },
};
