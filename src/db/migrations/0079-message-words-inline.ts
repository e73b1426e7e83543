import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';
import { searchTextSql } from './0010-search.js';
import { messageWordsInsertedFunction } from './0077-message-words-once.js';

/**
 * PostgreSQL: the statement trigger that copies inserted messages' search words into
 * `message_words` (migrations 0071 and 0077) computes them with `parley_search_text`'s expression
 * written out, not through the function. The function is declared immutable but calls `unaccent`,
 * which is only stable, so PostgreSQL cannot put its body in the caller's place and runs it through
 * the SQL function executor, which parses and plans the body again for each statement that calls
 * it: ~30 us of PostgreSQL's CPU for every statement inserting messages (every send and ingest
 * batch), whatever its size (docs/performance.md). The words are the
 * same: the expression is the function's body (migration 0010 `searchTextSql`).
 */
export const messageWordsInline: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql.raw(messageWordsInsertedFunction(searchTextSql('n.text'))).execute(db);
  },
};
