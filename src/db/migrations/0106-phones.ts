import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';
import { normalizePhone } from '../../domain/customers/phone.js';

/** SQLite: a customer's search document: name, login, e-mail, and the phone's words (migration 0105 before). */
const customerDoc = (r: string) =>
  sql.raw(
    `parley_search_text(coalesce(${r}.name,'') || ' ' || coalesce(${r}.login,'') || ' ' || coalesce(${r}.email,'') || ' ' || ` +
      `parley_phone_words(${r}.phone))`,
  );

/** PostgreSQL: the phone's search words (src/domain/search/search-text.ts `phoneWords`). */
const PHONE_WORDS_SQL = `select concat_ws(' ', d, ${[10, 9, 8, 7, 6, 5, 4].map((n) => `case when length(d) > ${n} then right(d, ${n}) end`).join(', ')})
  from (select regexp_replace(coalesce(t, ''), '[^0-9]', '', 'g') as d) x`;

/** Customers normalized per statement when existing phones are rewritten. */
const BATCH = 1000;

/**
 * Phones in one form (docs/api/search.md "Phones"): the account setting `defaultCountry`
 * (`accounts.default_country`, RU), `customers.phone_as_typed` beside the E.164 `phone`, every
 * stored phone normalized (read in RU: no account has set another country yet), and customers
 * found by the last 4 to 10 digits of their phone (`parley_phone_words` in the search document), and
 * an index of customers by phone (write first continues the customer who has it).
 */
export const phones: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .alterTable('accounts')
      .addColumn('default_country', 'text', (c) => c.notNull().defaultTo('RU'))
      .execute();
    await db.schema.alterTable('customers').addColumn('phone_as_typed', 'text').execute();

    let after = 0;
    for (;;) {
      const rows: Array<{ id: number; phone: string }> = await db
        .selectFrom('customers')
        .select(['id', 'phone'])
        .where('phone', 'is not', null)
        .where('id', '>', after)
        .orderBy('id')
        .limit(BATCH)
        .execute();
      if (!rows.length) break;
      for (const r of rows) {
        const p = normalizePhone(r.phone, 'RU');
        await sql`update customers set phone = ${p.phone}, phone_as_typed = ${r.phone} where id = ${r.id}`.execute(db);
      }
      after = Number(rows[rows.length - 1].id);
    }

    // Write first finds the customer who has a phone (src/domain/messaging/messaging.repo.ts).
    await db.schema.createIndex('customers_phone_idx').on('customers').columns(['account_id', 'phone']).execute();

    if (kit.dialect === 'sqlite') {
      await db.transaction().execute(async (trx) => {
        for (const t of ['customers_fts_ai', 'customers_fts_au']) await sql`drop trigger if exists ${sql.id(t)}`.execute(trx);
        await sql`delete from customers_fts`.execute(trx);
        await sql`insert into customers_fts(rowid, doc) select c.id, ${customerDoc('c')} from customers c`.execute(trx);
        await sql`create trigger customers_fts_ai after insert on customers begin
          insert into customers_fts(rowid, doc) values (new.id, ${customerDoc('new')}); end`.execute(trx);
        await sql`create trigger customers_fts_au after update of name, login, email, phone on customers begin
          delete from customers_fts where rowid = old.id;
          insert into customers_fts(rowid, doc) values (new.id, ${customerDoc('new')}); end`.execute(trx);
      });
      return;
    }

    await sql`create or replace function parley_phone_words(t text) returns text
      language sql immutable parallel safe as $$ ${sql.raw(PHONE_WORDS_SQL)} $$`.execute(db);
    // A generated column's expression cannot be altered: made again, which computes every row.
    await sql`alter table customers drop column search_tsv`.execute(db);
    await sql`alter table customers add column search_tsv tsvector
      generated always as (to_tsvector('simple'::regconfig, parley_search_text(
        coalesce(name,'') || ' ' || coalesce(login,'') || ' ' || coalesce(email,'') || ' ' || parley_phone_words(phone)))) stored`.execute(
      db,
    );
    await sql`update lead_words w set search_tsv = c.search_tsv from leads l join customers c on c.id = l.customer_id
      where l.id = w.lead_id`.execute(db);
  },
};
