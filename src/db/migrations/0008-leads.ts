import type { ParleyMigration } from './helpers.js';

/**
 * Lead lists: the two list indexes of 0002 widened so that the page's ids and the total
 * are read from the index alone for the usual filters. After the order columns come those that
 * visibility (integration, employee, status type) and the cheap filters (unread, answered) test:
 * the database checks them on index entries instead of fetching every lead row it passes.
 * - leads_list_cover_idx: one list type (inbox, active; completed is two ranges) in order;
 * - leads_recent_cover_idx: every type in order (all, /leads), status type tested on the entry.
 */
export const leads: ParleyMigration = {
  async up(db) {
    const extra = ['integration_id', 'user_id', 'unread_count', 'last_message_incoming'];
    await db.schema
      .createIndex('leads_list_cover_idx')
      .on('leads')
      .columns(['account_id', 'status_type', 'last_message_at', 'id', ...extra])
      .execute();
    await db.schema
      .createIndex('leads_recent_cover_idx')
      .on('leads')
      .columns(['account_id', 'last_message_at', 'id', 'status_type', ...extra])
      .execute();
    // The narrower indexes are prefixes of these: keeping them would only slow every message down.
    await db.schema.dropIndex('leads_list_idx').execute();
    await db.schema.dropIndex('leads_recent_idx').execute();
  },
};
