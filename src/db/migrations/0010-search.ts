import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: the search text of the text expression `text` (unaccented, lower case, runs of
 * letters and digits): the body of `parley_search_text`, which migration 0079 also writes out
 * where a statement computes many messages' words at once.
 */
export const searchTextSql = (text: string): string =>
  `lower(regexp_replace(public.unaccent('public.unaccent'::regdictionary, coalesce(${text}, '')), '[^[:alnum:]]+', ' ', 'g'))`;

/**
 * Full-text indexes of message texts and customers, maintained by the database in the transaction
 * that writes the row (triggers on SQLite, generated columns on PostgreSQL): a message is
 * searchable as soon as the send or ingest that stored it has answered.
 *
 * Both dialects index the same tokens: runs of letters and digits, lower-cased, accents removed.
 */
export const search: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect === 'sqlite') {
      await sql`create virtual table messages_fts using fts5(text, content='messages', content_rowid='id', tokenize="unicode61 remove_diacritics 2")`.execute(
        db,
      );
      await sql`create trigger messages_fts_ai after insert on messages begin
        insert into messages_fts(rowid, text) values (new.id, new.text); end`.execute(db);
      await sql`create trigger messages_fts_ad after delete on messages begin
        insert into messages_fts(messages_fts, rowid, text) values ('delete', old.id, old.text); end`.execute(db);
      await sql`create trigger messages_fts_au after update of text on messages begin
        insert into messages_fts(messages_fts, rowid, text) values ('delete', old.id, old.text);
        insert into messages_fts(rowid, text) values (new.id, new.text); end`.execute(db);

      // Customers: name, login, e-mail and phone digits (full and the last ten, to match without a
      // country code) in one contentless index keyed by customer id.
      await sql`create virtual table customers_fts using fts5(doc, content='', contentless_delete=1, tokenize="unicode61 remove_diacritics 2")`.execute(
        db,
      );
      const doc = (r: string) =>
        sql.raw(
          `coalesce(${r}.name,'') || ' ' || coalesce(${r}.login,'') || ' ' || coalesce(${r}.email,'') || ' ' || ` +
            `parley_digits(${r}.phone) || ' ' || substr(parley_digits(${r}.phone), -10)`,
        );
      await sql`create trigger customers_fts_ai after insert on customers begin
        insert into customers_fts(rowid, doc) values (new.id, ${doc('new')}); end`.execute(db);
      await sql`create trigger customers_fts_ad after delete on customers begin
        delete from customers_fts where rowid = old.id; end`.execute(db);
      await sql`create trigger customers_fts_au after update of name, login, email, phone on customers begin
        delete from customers_fts where rowid = old.id;
        insert into customers_fts(rowid, doc) values (new.id, ${doc('new')}); end`.execute(db);
      return;
    }

    await sql`create extension if not exists unaccent schema public`.execute(db);
    // unaccent() is not immutable (it reads a dictionary by name); pinning the dictionary makes
    // this wrapper safe for generated columns and indexes.
    await sql`create or replace function parley_search_text(t text) returns text
      language sql immutable parallel safe as
      $$ select ${sql.raw(searchTextSql('t'))} $$`.execute(db);
    await sql`create or replace function parley_digits(t text) returns text
      language sql immutable parallel safe as $$ select regexp_replace(coalesce(t, ''), '[^0-9]', '', 'g') $$`.execute(db);
    await sql`alter table messages add column search_tsv tsvector
      generated always as (to_tsvector('simple'::regconfig, parley_search_text(text))) stored`.execute(db);
    await sql`create index messages_search_idx on messages using gin (search_tsv)`.execute(db);
    await sql`alter table customers add column search_tsv tsvector
      generated always as (to_tsvector('simple'::regconfig, parley_search_text(
        coalesce(name,'') || ' ' || coalesce(login,'') || ' ' || coalesce(email,'') || ' ' ||
        parley_digits(phone) || ' ' || right(parley_digits(phone), 10)))) stored`.execute(db);
    await sql`create index customers_search_idx on customers using gin (search_tsv)`.execute(db);
  },
};
