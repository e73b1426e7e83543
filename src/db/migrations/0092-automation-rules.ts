import type { ParleyMigration } from './helpers.js';

/**
 * Automation rules and their runs (docs/api/automation.md). A rule's `conditions` and `actions`
 * are JSON arrays. A run is unique per rule and event, which is how a rule acts once per event
 * across processes; `results` holds the outcome of each action done so far and `done` whether all
 * were, so a run cut short (a killed process) resumes after its last recorded action once its
 * lease (`claimed_until`) has passed. Runs are pruned with the events.
 */
export const automationRules: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('automation_rules'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('event', 'text', (c) => c.notNull())
      .addColumn('idle_minutes', 'integer')
      .addColumn('conditions', 'text', (c) => c.notNull())
      .addColumn('actions', 'text', (c) => c.notNull())
      .addColumn('position', 'integer', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('automation_rules_account_idx').on('automation_rules').columns(['account_id', 'position']).execute();
    await kit
      .id(db.schema.createTable('automation_runs'))
      .addColumn('rule_id', bigint, (c) => c.notNull().references('automation_rules.id').onDelete('cascade'))
      .addColumn('event_id', bigint, (c) => c.notNull())
      .addColumn('lead_id', bigint)
      .addColumn('at', bigint, (c) => c.notNull())
      .addColumn('results', 'text', (c) => c.notNull())
      .addColumn('done', 'integer', (c) => c.notNull())
      .addColumn('claimed_until', bigint, (c) => c.notNull())
      .addUniqueConstraint('automation_runs_rule_event', ['rule_id', 'event_id'])
      .execute();
    await db.schema.createIndex('automation_runs_at_idx').on('automation_runs').column('at').execute();
    await db.schema.createIndex('automation_runs_open_idx').on('automation_runs').columns(['done', 'claimed_until']).execute();
  },
};
