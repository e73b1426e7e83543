import type { ParleyMigration } from './helpers.js';

/**
 * Internal notes on leads: written by employees, read by employees who see the lead,
 * never sent to the customer. `mentions` holds the JSON array of the employee ids the text names.
 * A note goes with its lead; its author may be removed later (the note stays, author unknown).
 */
export const leadNotes: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await kit
      .id(db.schema.createTable('lead_notes'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('lead_id', bigint, (c) => c.notNull().references('leads.id').onDelete('cascade'))
      .addColumn('user_id', bigint, (c) => c.references('users.id').onDelete('set null'))
      .addColumn('text', 'text', (c) => c.notNull())
      .addColumn('mentions', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('lead_notes_lead_idx').on('lead_notes').columns(['lead_id', 'id']).execute();
  },
};
