import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';
import { ingestConversationsFunction, INGEST_READ_CONVERSATIONS as READ_AS_JSONB } from './0072-ingest-conversations.js';

/**
 * PostgreSQL: `parley_ingest_conversations` (migration 0072) answers the senders' profiles, channels
 * and leads as `json` instead of `jsonb`. `to_jsonb` builds each row in jsonb's binary form, which
 * is then written out as text for the client; `row_to_json` writes the text from the row at once.
 * On the bench's data, a call for 12 senders took 0.61-0.70 ms against 0.74-0.80 ms
 * (docs/performance.md). The client parses both alike
 * (`JSON.parse`), and the objects keep the columns' order, as rows read otherwise do. The
 * statement is migration 0072's with that one change.
 */
export const INGEST_READ_CONVERSATIONS = READ_AS_JSONB.replaceAll('to_jsonb(', 'row_to_json(');

export const ingestRowsAsJson: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    // Its result's columns change type, which `create or replace` cannot do.
    await sql`drop function parley_ingest_conversations(bigint[], text[], text[], text[], text[])`.execute(db);
    await sql.raw(ingestConversationsFunction(INGEST_READ_CONVERSATIONS, 'json')).execute(db);
  },
};
