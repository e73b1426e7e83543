import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the indexes of the first steps of message and customer search, which walk an
 * integration's newest messages and an account's newest leads (src/domain/search/search.repo.ts
 * `messagePageWalking`, `customerLeadIdsWalking`; issue 19): `messages (integration_id, id)` and
 * `leads (account_id, id)`. Without them each walk went through every integration's or account's
 * rows by id. SQLite searches through its FTS5 tables instead and does not need them.
 */
export const searchWalks: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create index messages_integration_id_idx on messages (integration_id, id)`.execute(db);
    await sql`create index leads_account_id_idx on leads (account_id, id)`.execute(db);
  },
};
