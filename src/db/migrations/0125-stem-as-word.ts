import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * A message search's other forms also match a word written as the term's stem (docs/api/search.md
 * "Messages"): SQLite indexes a word's stem only where it differs from the word
 * (src/domain/search/search-text.ts `searchStems`), so its query asks `words : stem` beside
 * `stems : stem`; PostgreSQL's `parley_message_query` asks `stem:A` beside `stem:B` so that both
 * databases give the same hits. SQLite's query lives in the process (query-terms.ts): nothing to do.
 */
export const stemAsWord: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_message_query(q text) returns tsquery
      language plpgsql immutable parallel safe as $$
      declare
        terms text[] := string_to_array(substr(q, strpos(q, ' ') + 1), ' ');
        exact text;
        forms text;
      begin
        select string_agg(t || ':*A', ' & ') into exact from unnest(terms) t;
        if split_part(q, ' ', 1) = 'exact' then return to_tsquery('simple'::regconfig, exact); end if;
        select string_agg('(' || t || ':*A | ' || coalesce(
            (select string_agg(l || ':B | ' || l || ':A', ' | ') from unnest(tsvector_to_array(to_tsvector('parley_stems'::regconfig, t))) l),
            t || ':B') || ')', ' & ')
          into forms from unnest(terms) t;
        return to_tsquery('simple'::regconfig, '(' || forms || ') & !(' || exact || ')');
      end $$`.execute(db);
  },
};
