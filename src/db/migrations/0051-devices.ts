import type { ParleyMigration } from './helpers.js';

/**
 * Device push: employees' devices (a Web Push subscription or an FCM token), the last
 * push per employee and lead (one per minute, claimed across processes by a conditional upsert),
 * which processes hold an employee's realtime connections (so push goes only to the absent), and
 * the owner's switch for message previews.
 */
export const devices: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('devices'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('platform', 'text', (c) => c.notNull())
      // The push address: the Web Push endpoint URL or the FCM registration token (unique per employee).
      .addColumn('address', 'text', (c) => c.notNull())
      // Web Push: the subscription's keys as JSON ({p256dh, auth}); FCM: null.
      .addColumn('keys', 'text')
      .addColumn('name', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('devices_user_address_idx').on('devices').columns(['user_id', 'address']).unique().execute();

    await db.schema
      .createTable('push_throttle')
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('lead_id', bigint, (c) => c.notNull())
      .addColumn('pushed_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('push_throttle_pk', ['user_id', 'lead_id'])
      .execute();

    await db.schema
      .createTable('realtime_presence')
      .addColumn('process_id', 'text', (c) => c.notNull())
      .addColumn('user_id', bigint, (c) => c.notNull())
      .addColumn('connections', 'integer', (c) => c.notNull())
      .addColumn('seen_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('realtime_presence_pk', ['process_id', 'user_id'])
      .execute();
    await db.schema.createIndex('realtime_presence_user_idx').on('realtime_presence').columns(['user_id', 'seen_at']).execute();

    await db.schema
      .alterTable('accounts')
      .addColumn('push_previews', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
  },
};
