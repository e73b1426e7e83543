import type { ParleyMigration } from './helpers.js';

/**
 * The site widget: its visitors (one per anonymous browser, or per verified identifier)
 * and their sessions (a random token kept by the browser, stored here only as its SHA-256), plus a
 * lookup of widget integrations by their public key (`integrations.external_id`).
 */
export const widget: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;

    await kit
      .id(db.schema.createTable('widget_visitors'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      /** The visitor's id in the conversation: the profile's socialId and the channel's externalId. */
      .addColumn('public_id', 'text', (c) => c.notNull())
      /** The identifier the business's server signed (identity verification), else null. */
      .addColumn('identifier', 'text')
      .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('email', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('phone', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('last_seen_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('widget_visitors_public_uq')
      .on('widget_visitors')
      .columns(['integration_id', 'public_id'])
      .unique()
      .execute();

    await kit
      .id(db.schema.createTable('widget_sessions'))
      .addColumn('visitor_id', bigint, (c) => c.notNull().references('widget_visitors.id').onDelete('cascade'))
      /** Hex SHA-256 of the visitor token. */
      .addColumn('token_hash', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('last_used_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('widget_sessions_token_uq').on('widget_sessions').column('token_hash').unique().execute();
    await db.schema.createIndex('widget_sessions_visitor_idx').on('widget_sessions').column('visitor_id').execute();

    await db.schema.createIndex('integrations_type_external_idx').on('integrations').columns(['type', 'external_id']).execute();
  },
};
