import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the search text of the text expression `text`, the steps of
 * src/domain/search/search-text.ts `searchText` in SQL: NFKD, "и" + U+0306 put back as "й", the
 * combining diacritical marks removed (so "ё" is "е"), lower case, runs of letters and digits.
 * `normalize` needs a UTF-8 database (docs/operations.md).
 */
export const searchTextSql = (text: string): string =>
  `btrim(regexp_replace(lower(regexp_replace(replace(replace(normalize(coalesce(${text}, ''), NFKD), E'\\u0438\\u0306', E'\\u0439'), ` +
  `E'\\u0418\\u0306', E'\\u0419'), '[\\u0300-\\u036f\\u1ab0-\\u1aff\\u1dc0-\\u1dff\\u20d0-\\u20ff\\ufe20-\\ufe2f]', '', 'g')), ` +
  `'[^[:alnum:]]+', ' ', 'g'))`;

/**
 * PostgreSQL: a message's search words from its search text `searchText`: the words as written
 * (weight A) and their Snowball stems (weight B, `parley_stems`), so a query can ask for either.
 */
export const messageWordsSql = (searchText: string): string =>
  `setweight(to_tsvector('simple'::regconfig, ${searchText}), 'A') || setweight(to_tsvector('parley_stems'::regconfig, ${searchText}), 'B')`;

/** SQLite: the prefix lengths of the FTS5 tables (migration 0015 says why). */
const PREFIX_LENGTHS = '1 2 3 4 5 6 7 8';

/** SQLite: a customer's search document, as migration 0010 made it, through `parley_search_text`. */
const customerDoc = (r: string) =>
  sql.raw(
    `parley_search_text(coalesce(${r}.name,'') || ' ' || coalesce(${r}.login,'') || ' ' || coalesce(${r}.email,'') || ' ' || ` +
      `parley_digits(${r}.phone) || ' ' || substr(parley_digits(${r}.phone), -10))`,
  );

/**
 * One normalization for index and query on both databases (src/domain/search/search-text.ts):
 * "й" stays a letter, "ё" is "е", and message words are indexed beside their Russian and English
 * stems. Neither tokenizer nor unaccent folds letters any more (SQLite's unicode61 folds only Latin
 * letters, unaccent's rules differ between installs): the one function does.
 *
 * SQLite: the FTS5 tables are made anew over normalized text (the tokenizer folds nothing more),
 * `messages_fts` contentless with two columns, `words` and `stems`. PostgreSQL: the text search
 * configuration `parley_stems`, a new `parley_search_text`, the message words' triggers writing
 * both weights, `parley_message_query` (a search's tsquery), and every message and customer
 * reindexed.
 */
export const searchText: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect === 'sqlite') {
      await db.transaction().execute(async (trx) => {
        for (const t of [
          'messages_fts_ai',
          'messages_fts_ad',
          'messages_fts_au',
          'customers_fts_ai',
          'customers_fts_ad',
          'customers_fts_au',
        ]) {
          await sql`drop trigger if exists ${sql.id(t)}`.execute(trx);
        }
        await sql`drop table if exists messages_fts`.execute(trx);
        await sql`drop table if exists customers_fts`.execute(trx);

        await sql`create virtual table messages_fts using fts5(words, stems, content='', contentless_delete=1,
          tokenize="unicode61 remove_diacritics 0", prefix=${sql.lit(PREFIX_LENGTHS)})`.execute(trx);
        await sql`insert into messages_fts(rowid, words, stems)
          select id, parley_search_text(text), parley_search_stems(text) from messages where text is not null and text <> ''`.execute(trx);
        await sql`create trigger messages_fts_ai after insert on messages when new.text is not null and new.text <> '' begin
          insert into messages_fts(rowid, words, stems) values (new.id, parley_search_text(new.text), parley_search_stems(new.text)); end`.execute(
          trx,
        );
        await sql`create trigger messages_fts_ad after delete on messages begin
          delete from messages_fts where rowid = old.id; end`.execute(trx);
        await sql`create trigger messages_fts_au after update of text on messages begin
          delete from messages_fts where rowid = old.id;
          insert into messages_fts(rowid, words, stems)
            select new.id, parley_search_text(new.text), parley_search_stems(new.text) where new.text is not null and new.text <> ''; end`.execute(
          trx,
        );

        await sql`create virtual table customers_fts using fts5(doc, content='', contentless_delete=1,
          tokenize="unicode61 remove_diacritics 0", prefix=${sql.lit(PREFIX_LENGTHS)})`.execute(trx);
        await sql`insert into customers_fts(rowid, doc) select c.id, ${customerDoc('c')} from customers c`.execute(trx);
        await sql`create trigger customers_fts_ai after insert on customers begin
          insert into customers_fts(rowid, doc) values (new.id, ${customerDoc('new')}); end`.execute(trx);
        await sql`create trigger customers_fts_ad after delete on customers begin
          delete from customers_fts where rowid = old.id; end`.execute(trx);
        await sql`create trigger customers_fts_au after update of name, login, email, phone on customers begin
          delete from customers_fts where rowid = old.id;
          insert into customers_fts(rowid, doc) values (new.id, ${customerDoc('new')}); end`.execute(trx);
      });
      await sql`pragma wal_checkpoint(truncate)`.execute(db);
      return;
    }

    // Snowball stemmers without stop words: a stop word ("в", "the") is still a word one may search.
    await sql`create text search dictionary parley_russian_stem (template = snowball, language = russian)`.execute(db);
    await sql`create text search dictionary parley_english_stem (template = snowball, language = english)`.execute(db);
    await sql`create text search configuration parley_stems (copy = simple)`.execute(db);
    // The parser's token types: ASCII letters only are English, other letters Russian
    // (search-text.ts STEMMERS chooses the same way); numbers and mixed words stay as they are.
    await sql`alter text search configuration parley_stems
      alter mapping for asciiword, asciihword, hword_asciipart with parley_english_stem`.execute(db);
    await sql`alter text search configuration parley_stems alter mapping for word, hword, hword_part with parley_russian_stem`.execute(db);

    await sql`create or replace function parley_search_text(t text) returns text
      language sql immutable parallel safe as $$ select ${sql.raw(searchTextSql('t'))} $$`.execute(db);
    await sql`create or replace function parley_message_words(t text) returns tsvector
      language sql immutable parallel safe as $$ select ${sql.raw(messageWordsSql('parley_search_text(t)'))} $$`.execute(db);

    // A message search's tsquery from `<tier> <term> <term>...` (src/domain/search/query-terms.ts
    // pgMessageQuery): `exact`, every term a prefix of a word as written; `forms`, every term a
    // prefix of a word or a word's stem, and not `exact`. Terms are letters and digits only.
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
            (select string_agg(l || ':B', ' | ') from unnest(tsvector_to_array(to_tsvector('parley_stems'::regconfig, t))) l),
            t || ':B') || ')', ' & ')
          into forms from unnest(terms) t;
        return to_tsquery('simple'::regconfig, '(' || forms || ') & !(' || exact || ')');
      end $$`.execute(db);

    await sql`create or replace function parley_message_words_inserted() returns trigger language plpgsql as $$
      begin
        with t as materialized (
          select n.integration_id, n.id, ${sql.raw(searchTextSql('n.text'))} as st from new_rows n
        ), w as materialized (
          select t.integration_id, t.id, ${sql.raw(messageWordsSql('t.st'))} as search_tsv from t
        )
        insert into message_words (integration_id, message_id, search_tsv)
          select w.integration_id, w.id, w.search_tsv from w where w.search_tsv <> ''::tsvector;
        return null;
      end $$`.execute(db);
    await sql`create or replace function parley_message_words_changed() returns trigger language plpgsql as $$
      declare tsv tsvector := parley_message_words(new.text);
      begin
        delete from message_words where integration_id = old.integration_id and message_id = old.id;
        if tsv <> ''::tsvector then
          insert into message_words (integration_id, message_id, search_tsv) values (new.integration_id, new.id, tsv);
        end if;
        return null;
      end $$`.execute(db);

    await sql`drop index if exists message_words_search_idx`.execute(db);
    await sql`truncate message_words`.execute(db);
    await sql`insert into message_words (integration_id, message_id, search_tsv)
      select w.integration_id, w.id, w.search_tsv
      from (select integration_id, id, parley_message_words(text) as search_tsv from messages order by id) w
      where w.search_tsv <> ''::tsvector`.execute(db);
    await sql`create index message_words_search_idx on message_words using gin (search_tsv)`.execute(db);
    // A stored generated column is computed again when its row is updated; the customers' statement
    // trigger (migration 0070) copies the changed words to their leads.
    await sql`update customers set name = name`.execute(db);
  },
};
