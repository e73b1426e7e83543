import type { ColumnDefinitionBuilder } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * The account's working model: integrations and employee access, statuses, payment types, tags,
 * reply templates, customers with their profiles, channels (sources), leads and messages.
 */
export const coreModel: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    const account = (c: ColumnDefinitionBuilder) => c.notNull().references('accounts.id').onDelete('cascade');

    await kit
      .id(db.schema.createTable('integrations'))
      .addColumn('account_id', bigint, account)
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('login', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('avatar', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('external_id', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('identifier', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('url', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('active'))
      .addColumn('credentials', 'text')
      .addColumn('settings', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('user_mappings', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('deleted_at', bigint)
      .execute();
    await db.schema.createIndex('integrations_account_idx').on('integrations').columns(['account_id', 'id']).execute();

    await kit
      .id(db.schema.createTable('user_sources'))
      .addColumn('account_id', bigint, account)
      .addColumn('user_id', bigint, (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('sa_id', bigint)
      .execute();
    await db.schema.createIndex('user_sources_user_idx').on('user_sources').column('user_id').execute();

    await kit
      .id(db.schema.createTable('statuses'))
      .addColumn('account_id', bigint, account)
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('color', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('statuses_account_idx').on('statuses').columns(['account_id', 'type', 'position']).execute();

    await kit
      .id(db.schema.createTable('payment_types'))
      .addColumn('account_id', bigint, account)
      .addColumn('title', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('payment_types_account_idx').on('payment_types').column('account_id').execute();

    await kit
      .id(db.schema.createTable('tags'))
      .addColumn('account_id', bigint, account)
      .addColumn('tag', 'text', (c) => c.notNull())
      /** Lower-cased tag: prefix search without case. */
      .addColumn('tag_key', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('tags_account_tag_uq').on('tags').columns(['account_id', 'tag']).unique().execute();
    await db.schema.createIndex('tags_account_key_idx').on('tags').columns(['account_id', 'tag_key']).execute();

    await kit
      .id(db.schema.createTable('template_groups'))
      .addColumn('account_id', bigint, account)
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('template_groups_key_uq').on('template_groups').columns(['account_id', 'key']).unique().execute();

    await kit
      .id(db.schema.createTable('templates'))
      .addColumn('account_id', bigint, account)
      .addColumn('group_id', bigint, (c) => c.notNull().references('template_groups.id').onDelete('cascade'))
      .addColumn('template', 'text', (c) => c.notNull())
      .addColumn('hotkey', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('user_id', bigint, (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('templates_group_idx').on('templates').column('group_id').execute();

    await kit
      .id(db.schema.createTable('customers'))
      .addColumn('account_id', bigint, account)
      .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('login', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('avatar', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('email', 'text')
      .addColumn('phone', 'text')
      .addColumn('address', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('customers_account_idx').on('customers').columns(['account_id', 'id']).execute();

    await kit
      .id(db.schema.createTable('profiles'))
      .addColumn('account_id', bigint, account)
      .addColumn('customer_id', bigint, (c) => c.notNull().references('customers.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('social_id', 'text', (c) => c.notNull())
      .addColumn('login', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('name', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('avatar', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('profile_url', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('profiles_social_uq').on('profiles').columns(['integration_id', 'social_id']).unique().execute();
    await db.schema.createIndex('profiles_customer_idx').on('profiles').column('customer_id').execute();

    await kit
      .id(db.schema.createTable('sources'))
      .addColumn('account_id', bigint, account)
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('customer_id', bigint, (c) => c.notNull().references('customers.id').onDelete('cascade'))
      .addColumn('external_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('name', 'text')
      .addColumn('sender', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('token', 'text')
      .addColumn('expires_at', bigint)
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('sources_external_uq').on('sources').columns(['integration_id', 'type', 'external_id']).unique().execute();
    await db.schema.createIndex('sources_customer_idx').on('sources').column('customer_id').execute();

    await kit
      .id(db.schema.createTable('leads'))
      .addColumn('account_id', bigint, account)
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      .addColumn('customer_id', bigint, (c) => c.notNull().references('customers.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.references('users.id').onDelete('set null'))
      .addColumn('status_id', bigint, (c) => c.references('statuses.id').onDelete('set null'))
      /** `inbox` (no status) or the status's type: what every list filters on, kept with status_id. */
      .addColumn('status_type', 'text', (c) => c.notNull().defaultTo('inbox'))
      .addColumn('details', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('amount', bigint, (c) => c.notNull().defaultTo(0))
      .addColumn('address', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('ttn', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('custom_data', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('custom_fields', 'text', (c) => c.notNull().defaultTo('{}'))
      .addColumn('payment_type_id', bigint, (c) => c.references('payment_types.id').onDelete('set null'))
      .addColumn('items', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('unread_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_message_id', bigint)
      .addColumn('last_message_at', bigint, (c) => c.notNull())
      .addColumn('last_message_incoming', 'integer')
      /** Instant of the first incoming message not yet answered; null when none waits. */
      .addColumn('awaiting_since', bigint)
      .addColumn('response_time', bigint)
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('leads_list_idx').on('leads').columns(['account_id', 'status_type', 'last_message_at', 'id']).execute();
    await db.schema.createIndex('leads_recent_idx').on('leads').columns(['account_id', 'last_message_at', 'id']).execute();
    await db.schema.createIndex('leads_customer_idx').on('leads').columns(['customer_id', 'integration_id', 'id']).execute();
    await db.schema.createIndex('leads_user_idx').on('leads').columns(['user_id']).execute();
    await db.schema.createIndex('leads_status_idx').on('leads').columns(['status_id']).execute();

    await db.schema
      .createTable('lead_tags')
      .addColumn('account_id', bigint, account)
      .addColumn('lead_id', bigint, (c) => c.notNull().references('leads.id').onDelete('cascade'))
      .addColumn('tag_id', bigint, (c) => c.notNull().references('tags.id').onDelete('cascade'))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('lead_tags_pk', ['lead_id', 'tag_id'])
      .execute();
    await db.schema.createIndex('lead_tags_tag_idx').on('lead_tags').columns(['tag_id', 'lead_id']).execute();

    await kit
      .id(db.schema.createTable('messages'))
      .addColumn('account_id', bigint, account)
      .addColumn('lead_id', bigint, (c) => c.notNull().references('leads.id').onDelete('cascade'))
      .addColumn('source_id', bigint, (c) => c.notNull().references('sources.id').onDelete('cascade'))
      .addColumn('integration_id', bigint, (c) => c.notNull())
      /** The provider's message id; unique per integration so a redelivery is stored once. */
      .addColumn('external_id', 'text')
      .addColumn('incoming', 'integer', (c) => c.notNull())
      .addColumn('text', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('url', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('attachments', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('reply_to', 'text')
      .addColumn('preview', 'text')
      .addColumn('profile_id', bigint)
      .addColumn('user_id', bigint)
      .addColumn('custom_id', 'text')
      .addColumn('unread', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('messages_external_uq').on('messages').columns(['integration_id', 'external_id']).unique().execute();
    await db.schema.createIndex('messages_history_idx').on('messages').columns(['lead_id', 'source_id', 'id']).execute();
    await db.schema.createIndex('messages_custom_idx').on('messages').columns(['lead_id', 'custom_id']).execute();
  },
};
