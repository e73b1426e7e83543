import type { ParleyMigration } from './helpers.js';

/**
 * Write first (`POST /messaging/post`): one row per contact first written to through an
 * integration, with the UTC day it was counted on. The per-integration daily limit on new contacts
 * (docs/api/messaging.md) counts these rows; a contact is counted once, ever (unique per integration).
 */
export const writeFirst: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('write_first_contacts'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      /** The destination written to: the profile's social id. */
      .addColumn('social_id', 'text', (c) => c.notNull())
      /** UTC day number (Unix ms / 86 400 000, floored) the contact counted against. */
      .addColumn('day', 'integer', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('write_first_contact_uq')
      .on('write_first_contacts')
      .columns(['integration_id', 'social_id'])
      .unique()
      .execute();
    await db.schema.createIndex('write_first_day_idx').on('write_first_contacts').columns(['integration_id', 'day']).execute();
  },
};
