import type { ParleyMigration } from './helpers.js';

/**
 * OAuth 2 for third-party apps. An app belongs to an account; a grant is one consent of
 * one employee to one app (the family of the tokens issued from it); codes and refresh tokens are
 * stored only as SHA-256 hashes. Deleting an app or an employee deletes its grants, codes and
 * refresh tokens (cascades), and access tokens name their grant, so they end too.
 */
export const oauth: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('oauth_apps'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('client_id', 'text', (c) => c.notNull().unique())
      .addColumn('secret_hash', 'text')
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('redirect_uris', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('oauth_apps_account_idx').on('oauth_apps').column('account_id').execute();

    await kit
      .id(db.schema.createTable('oauth_grants'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('app_id', bigint, (c) => c.notNull().references('oauth_apps.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('revoked_at', bigint)
      .execute();
    await db.schema.createIndex('oauth_grants_user_idx').on('oauth_grants').columns(['user_id', 'app_id']).execute();
    await db.schema.createIndex('oauth_grants_app_idx').on('oauth_grants').column('app_id').execute();

    await kit
      .id(db.schema.createTable('oauth_codes'))
      .addColumn('code_hash', 'text', (c) => c.notNull().unique())
      .addColumn('grant_id', bigint, (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_challenge', 'text')
      .addColumn('code_challenge_method', 'text')
      .addColumn('expires_at', bigint, (c) => c.notNull())
      .addColumn('used_at', bigint)
      .execute();
    await db.schema.createIndex('oauth_codes_grant_idx').on('oauth_codes').column('grant_id').execute();

    await kit
      .id(db.schema.createTable('oauth_refresh_tokens'))
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('grant_id', bigint, (c) => c.notNull().references('oauth_grants.id').onDelete('cascade'))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('expires_at', bigint, (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('revoked_at', bigint)
      .execute();
    await db.schema.createIndex('oauth_refresh_grant_idx').on('oauth_refresh_tokens').column('grant_id').execute();
  },
};
