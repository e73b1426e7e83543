import type { ParleyMigration } from './helpers.js';

/**
 * Runs of a rule that changed nothing (every action added a tag the lead had), kept compactly
 * (docs/api/automation.md "How they run"): a row per rule and batch, `runs` a JSON array of
 * `[eventId, leadId]` oldest first, `event_id` the newest of them, `actions` the results each of
 * those runs had. Such a run needs no progress or lease; that it ran once per event is kept by the
 * event's `rules` row in `automation_claims`. Pruned with the events by `at`.
 */
export const quietRuns: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('automation_quiet_runs')
      .addColumn('rule_id', bigint, (c) => c.notNull().references('automation_rules.id').onDelete('cascade'))
      .addColumn('event_id', bigint, (c) => c.notNull())
      .addColumn('at', bigint, (c) => c.notNull())
      .addColumn('runs', 'text', (c) => c.notNull())
      .addColumn('actions', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('automation_quiet_runs_pk', ['rule_id', 'event_id'])
      .execute();
    await db.schema.createIndex('automation_quiet_runs_at_idx').on('automation_quiet_runs').column('at').execute();
  },
};
