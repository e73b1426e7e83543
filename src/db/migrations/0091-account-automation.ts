import type { ParleyMigration } from './helpers.js';

/**
 * An account's automation settings (docs/api/automation.md): its working hours (JSON
 * `{timezone, week, holidays}`, null: open around the clock) and its first-response target in
 * minutes (null: none).
 */
export const accountAutomation: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('account_automation')
      .addColumn('account_id', bigint, (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
      .addColumn('working_hours', 'text')
      .addColumn('first_response_minutes', 'integer')
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
  },
};
