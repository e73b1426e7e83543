import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * Prefix indexes for the SQLite search tables (performance). Every query word is a prefix
 * term (`"order"*`); without an index of that prefix length FTS5 reads and merges the whole doclist
 * of every word that starts with it before it can return a row, so a common word cost the whole of
 * its matches: `order` (in 31% of 1M messages) 9-16 ms, a one-letter word up to 190 ms, on the one
 * SQLite connection every request shares. With `prefix=` the prefix has a doclist of its own, read
 * newest-first and lazily like a whole word: 0.1 ms. Up to eight characters: longer prefixes are
 * shared by few words (`warranty` 1.6 ms without). The cost: the message index grows ~4x (27 to
 * 130 MB at 1M messages) and each indexed message writes its prefixes too.
 *
 * FTS5 cannot alter a table's options, so both tables are made anew and filled from their sources,
 * in one transaction with their triggers (as of 0010): on an existing install this runs once at
 * start-up (8-21 s at 1M messages) and either completes or leaves 0010's tables. PostgreSQL's GIN
 * indexes answer prefixes already (`to_tsquery('order:*')`): nothing to do there.
 */
const PREFIX_LENGTHS = '1 2 3 4 5 6 7 8';

export const searchPrefixes: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'sqlite') return;
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

      await sql`create virtual table messages_fts using fts5(text, content='messages', content_rowid='id',
        tokenize="unicode61 remove_diacritics 2", prefix=${sql.lit(PREFIX_LENGTHS)})`.execute(trx);
      // An external-content table re-reads its content table.
      await sql`insert into messages_fts(messages_fts) values ('rebuild')`.execute(trx);
      await sql`create trigger messages_fts_ai after insert on messages begin
        insert into messages_fts(rowid, text) values (new.id, new.text); end`.execute(trx);
      await sql`create trigger messages_fts_ad after delete on messages begin
        insert into messages_fts(messages_fts, rowid, text) values ('delete', old.id, old.text); end`.execute(trx);
      await sql`create trigger messages_fts_au after update of text on messages begin
        insert into messages_fts(messages_fts, rowid, text) values ('delete', old.id, old.text);
        insert into messages_fts(rowid, text) values (new.id, new.text); end`.execute(trx);

      await sql`create virtual table customers_fts using fts5(doc, content='', contentless_delete=1,
        tokenize="unicode61 remove_diacritics 2", prefix=${sql.lit(PREFIX_LENGTHS)})`.execute(trx);
      const doc = (r: string) =>
        sql.raw(
          `coalesce(${r}.name,'') || ' ' || coalesce(${r}.login,'') || ' ' || coalesce(${r}.email,'') || ' ' || ` +
            `parley_digits(${r}.phone) || ' ' || substr(parley_digits(${r}.phone), -10)`,
        );
      // A contentless table has nothing to rebuild from: its documents are made again from customers.
      await sql`insert into customers_fts(rowid, doc) select c.id, ${doc('c')} from customers c`.execute(trx);
      await sql`create trigger customers_fts_ai after insert on customers begin
        insert into customers_fts(rowid, doc) values (new.id, ${doc('new')}); end`.execute(trx);
      await sql`create trigger customers_fts_ad after delete on customers begin
        delete from customers_fts where rowid = old.id; end`.execute(trx);
      await sql`create trigger customers_fts_au after update of name, login, email, phone on customers begin
        delete from customers_fts where rowid = old.id;
        insert into customers_fts(rowid, doc) values (new.id, ${doc('new')}); end`.execute(trx);
    });
    // The transaction grew the WAL file to ~150 MB at 1M messages; it would keep that size until the
    // process closes the database. Its pages are in the database file already (auto-checkpoint).
    await sql`pragma wal_checkpoint(truncate)`.execute(db);
  },
};
