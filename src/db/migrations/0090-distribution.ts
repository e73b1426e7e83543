import type { ParleyMigration } from './helpers.js';

/**
 * Distribution of new leads among employees (docs/api/automation.md). `users.available` is the
 * employee's "Available / Away" switch. `lead_distributions` holds an integration's mode, its
 * employees (JSON array, null = every confirmed employee reaching the integration) and the
 * round-robin position (`last_user_id`), kept here so that every process continues the same
 * rotation. `automation_claims` makes each event's automation happen once across processes: a row
 * per consumer and event, written in the transaction of what it did. `automation_cursors` is where
 * the automation consumer resumes reading the outbox after a restart.
 */
export const distribution: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .alterTable('users')
      .addColumn('available', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
    await db.schema
      .createTable('lead_distributions')
      .addColumn('integration_id', bigint, (c) => c.primaryKey().references('integrations.id').onDelete('cascade'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('mode', 'text', (c) => c.notNull())
      .addColumn('employees', 'text')
      .addColumn('only_available', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('last_user_id', bigint)
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('automation_claims')
      .addColumn('consumer', 'text', (c) => c.notNull())
      .addColumn('event_id', bigint, (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('automation_claims_pk', ['consumer', 'event_id'])
      .execute();
    await db.schema.createIndex('automation_claims_created_idx').on('automation_claims').column('created_at').execute();
    await db.schema
      .createTable('automation_cursors')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('event_id', bigint, (c) => c.notNull())
      .execute();
  },
};
