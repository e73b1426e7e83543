import type { ParleyMigration } from './helpers.js';

/**
 * The language an employee chose for the agent app and Parley's e-mails (`locale`, docs/api/resources.md
 * "Employee (manager)"): null until chosen, when the app follows the browser.
 */
export const employeeLocale: ParleyMigration = {
  async up(db) {
    await db.schema.alterTable('users').addColumn('locale', 'text').execute();
  },
};
