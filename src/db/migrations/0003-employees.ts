import type { ParleyMigration } from './helpers.js';

/**
 * Employee invitations (one-time links that confirm an invited employee) and plugins (revocable
 * tokens that an external tool exchanges for access tokens acting as an employee).
 */
export const employees: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;

    await kit
      .id(db.schema.createTable('invitations'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      /** SHA-256 of the token in the link: a leaked table does not leak usable links. */
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('expires_at', bigint, (c) => c.notNull())
      .addColumn('used_at', bigint)
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('invitations_user_idx').on('invitations').column('user_id').execute();

    await kit
      .id(db.schema.createTable('plugins'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
      /** SHA-256 of the plugin token; the token itself is shown once, at creation. */
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('revoked_at', bigint)
      .execute();
    await db.schema.createIndex('plugins_account_idx').on('plugins').columns(['account_id', 'id']).execute();
  },
};
