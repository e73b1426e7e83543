import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the indexes of the first steps of message and customer search, which walk an
 * integration's newest messages and an account's newest leads (src/domain/search/search.repo.ts
 * `messagePageWalking`, `customerLeadsWalking`): `messages (integration_id, id)` and
 * `leads (account_id, id)`. Without them each walk went through every integration's or account's
 * rows by id. SQLite searches through its FTS5 tables instead and does not need them.
 */
export const searchWalks: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    // Partial, with predicates only the walks state (search.repo.ts): the hot path's statements are
    // named and may keep a generic plan made while a table was empty, and with a plain index of
    // the same leading column that plan read `messages where integration_id = $1 and external_id
    // = $2` through this index instead of the unique one: every message of the integration per
    // redelivery check (218M index entries read for 15,000 messages). A query that does not say
    // `search_tsv is not null` / `id > 0` cannot use these at all.
    await sql`create index messages_integration_id_idx on messages (integration_id, id) where search_tsv is not null`.execute(db);
    await sql`create index leads_account_id_idx on leads (account_id, id) where id > 0`.execute(db);
  },
};
