import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the foreign keys from `messages.account_id` and `events.account_id` to `accounts`
 * dropped (docs/performance.md). Every message and every event
 * written checked its account by a foreign key: a look-up per row (~5 µs) and, in each writing
 * transaction, a key-share lock on the account's one row, which writes the lock into that row for
 * every transaction of the account (and a multixact when two transactions hold it at once).
 * Neither key guards what is not guarded otherwise:
 * - a message belongs to its lead (`messages.lead_id`, cascading), and a lead to the message's
 *   account (both are written with the account of the lead's integration or of the lead itself);
 *   deleting an account deletes its leads, and they their messages;
 * - an account's events are deleted with the account by `deleteAccountRow`
 *   (src/domain/retention/retention.repo.ts) before its row, and otherwise by event retention.
 * SQLite keeps both keys: it checks a key as a look-up without locks, and dropping one there
 * would rebuild the table.
 */
export const hotPathKeys: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`alter table messages drop constraint if exists messages_account_id_fkey`.execute(db);
    await sql`alter table events drop constraint if exists events_account_id_fkey`.execute(db);
  },
};
