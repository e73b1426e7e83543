import type { ParleyMigration } from './helpers.js';

/**
 * Webhooks (docs/api/webhooks.md): endpoints per account, one delivery per (event, endpoint) written in
 * the transaction of the event, and the log of every attempt.
 */
export const webhooks: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;

    await kit
      .id(db.schema.createTable('webhooks'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('status', 'integer', (c) => c.notNull().defaultTo(1))
      /** JSON array of event types, or null for every type. */
      .addColumn('events', 'text')
      .addColumn('secret', 'text', (c) => c.notNull())
      /** The API version it was registered through: it decides the payload shape. */
      .addColumn('api_version', 'text', (c) => c.notNull())
      .addColumn('failing_since', bigint)
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('webhooks_account_url_idx').on('webhooks').columns(['account_id', 'url']).unique().execute();

    await kit
      .id(db.schema.createTable('deliveries'))
      .addColumn('webhook_id', bigint, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
      .addColumn('event_id', bigint, (c) => c.notNull().references('events.id').onDelete('cascade'))
      /** The `webhook-id` header: stable across retries so receivers can deduplicate. */
      .addColumn('message_id', 'text', (c) => c.notNull())
      .addColumn('lead_id', bigint)
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending'))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_attempt_at', bigint, (c) => c.notNull())
      .addColumn('lease_until', bigint)
      .addColumn('leased_by', 'text')
      .addColumn('last_status_code', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('delivered_at', bigint)
      .execute();
    // Claims look for due pending rows; ordering checks look for earlier pending rows of a lead.
    await db.schema.createIndex('deliveries_due_idx').on('deliveries').columns(['status', 'next_attempt_at']).execute();
    await db.schema.createIndex('deliveries_lead_idx').on('deliveries').columns(['webhook_id', 'lead_id', 'status', 'id']).execute();
    await db.schema.createIndex('deliveries_webhook_idx').on('deliveries').columns(['webhook_id', 'id']).execute();

    await kit
      .id(db.schema.createTable('delivery_attempts'))
      .addColumn('delivery_id', bigint, (c) => c.notNull().references('deliveries.id').onDelete('cascade'))
      .addColumn('at', bigint, (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('duration_ms', 'integer', (c) => c.notNull())
      .addColumn('error', 'text')
      .execute();
    await db.schema.createIndex('delivery_attempts_delivery_idx').on('delivery_attempts').columns(['delivery_id', 'id']).execute();
  },
};
