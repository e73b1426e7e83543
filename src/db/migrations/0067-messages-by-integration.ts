import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: `messages (integration_id, id)`, for message search's first step, which walks an
 * integration's newest messages (src/domain/search/search.repo.ts `messagePageWalking`; issue 19).
 * Without it the walk went through every integration's messages by id. SQLite searches through its
 * FTS5 table in id order instead and does not need it.
 */
export const messagesByIntegration: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create index messages_integration_id_idx on messages (integration_id, id)`.execute(db);
  },
};
