import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the statement trigger that copies inserted messages' search words into
 * `message_words` (migration 0071) computes each message's words once. Its words were a column of a
 * subquery that the outer query both returned and filtered on (no row for a message without
 * words); PostgreSQL pulls such a subquery up into the outer query and writes the expression out in
 * both places, so `parley_search_text` and `to_tsvector` ran twice per message: two calls of the
 * function per message inserted, counted by `pg_stat_statements` in every send and ingest batch
 * (docs/performance.md). A materialized CTE computes the words once
 * and the filter reads them.
 */
export const messageWordsOnce: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql.raw(messageWordsInsertedFunction('parley_search_text(n.text)')).execute(db);
  },
};

/**
 * The statement (re)creating the insert trigger's function, `searchText` being the search text of
 * an inserted row `n`'s text (migration 0079 writes it out instead of calling the function).
 */
export const messageWordsInsertedFunction = (searchText: string): string =>
  `create or replace function parley_message_words_inserted() returns trigger language plpgsql as $$
      begin
        with w as materialized (
          select n.integration_id, n.id, to_tsvector('simple'::regconfig, ${searchText}) as search_tsv from new_rows n
        )
        insert into message_words (integration_id, message_id, search_tsv)
          select w.integration_id, w.id, w.search_tsv from w where w.search_tsv <> ''::tsvector;
        return null;
      end $$`;
