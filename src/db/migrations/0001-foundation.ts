import type { ParleyMigration } from './helpers.js';

/** Accounts, employees, sign-in state, and the event outbox. */
export const foundation: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('accounts'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('plan', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();

    await kit
      .id(db.schema.createTable('users'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('login', 'text', (c) => c.notNull().unique())
      .addColumn('name', 'text')
      .addColumn('password_hash', 'text')
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('confirmed', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('allow_all_deals', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('allowed_users', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('tokens_valid_after', bigint, (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('users_account_idx').on('users').columns(['account_id', 'id']).execute();

    await db.schema
      .createTable('refresh_tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('family_id', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull())
      .addColumn('expires_at', bigint, (c) => c.notNull())
      .addColumn('revoked_at', bigint)
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('refresh_tokens_family_idx').on('refresh_tokens').column('family_id').execute();
    await db.schema.createIndex('refresh_tokens_user_idx').on('refresh_tokens').column('user_id').execute();

    await kit
      .id(db.schema.createTable('api_keys'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('jti', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('revoked_at', bigint)
      .execute();
    await db.schema.createIndex('api_keys_account_idx').on('api_keys').column('account_id').execute();

    await kit
      .id(db.schema.createTable('events'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('lead_id', bigint)
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('events_account_idx').on('events').columns(['account_id', 'id']).execute();
  },
};
