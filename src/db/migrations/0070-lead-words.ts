import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: each lead's customer search words (`customers.search_tsv`) beside the lead's id, in a
 * narrow table of their own, so customer search's first step tests the account's newest leads
 * without looking each lead's customer up (src/domain/search/search.repo.ts
 * `customerLeadsWalking`; docs/performance.md). That look-up was most of
 * the step's time (~2 us a lead, or every match's customer row read from the GIN index: 3-10 ms
 * at 100k customers; testing the copied words: ~0.7 ms).
 *
 * Kept by triggers, so no writer has to know:
 * - a statement inserting leads copies their customers' words once it has run: a statement trigger
 *   reads the new leads from its transition table, and sees the customers the same statement
 *   inserted (the ingest batch inserts customers and leads in one statement, whose parts cannot
 *   see each other's rows while it runs);
 * - a statement changing customers' words copies them to their leads (only rows whose words
 *   changed, read from the transition tables);
 * - a lead given another customer takes that customer's words (no writer does this today; the
 *   row trigger fires only when `customer_id` is set to a different value);
 * - deleting a lead deletes its row (the foreign key).
 *
 * Not a column of `leads`: every read of whole lead rows would then carry the words too. SQLite
 * searches through its FTS5 tables and does not need this.
 */
export const leadWords: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create table lead_words (
      lead_id bigint primary key references leads (id) on delete cascade,
      account_id bigint not null,
      search_tsv tsvector
    )`.execute(db);
    await sql`insert into lead_words (lead_id, account_id, search_tsv)
      select l.id, l.account_id, c.search_tsv from leads l join customers c on c.id = l.customer_id`.execute(db);
    // The walk's order (account, lead); the primary key serves the foreign key's deletes.
    await sql`create index lead_words_account_idx on lead_words (account_id, lead_id)`.execute(db);
    // The older matches (customer search's second step).
    await sql`create index lead_words_search_idx on lead_words using gin (search_tsv)`.execute(db);
    // What customer search read before (migrations 0010, 0067); nothing else reads them.
    await sql`drop index if exists leads_account_id_idx`.execute(db);
    await sql`drop index if exists customers_search_idx`.execute(db);

    await sql`create or replace function parley_lead_words_inserted() returns trigger language plpgsql as $$
      begin
        insert into lead_words (lead_id, account_id, search_tsv)
          select n.id, n.account_id, c.search_tsv from new_rows n join customers c on c.id = n.customer_id;
        return null;
      end $$`.execute(db);
    await sql`create trigger leads_words_insert after insert on leads
      referencing new table as new_rows for each statement execute function parley_lead_words_inserted()`.execute(db);

    await sql`create or replace function parley_lead_words_customers_updated() returns trigger language plpgsql as $$
      begin
        update lead_words w set search_tsv = n.search_tsv
          from new_rows n join old_rows o on o.id = n.id join leads l on l.customer_id = n.id
          where n.search_tsv is distinct from o.search_tsv and w.lead_id = l.id;
        return null;
      end $$`.execute(db);
    await sql`create trigger customers_words_update after update on customers
      referencing old table as old_rows new table as new_rows for each statement execute function parley_lead_words_customers_updated()`.execute(
      db,
    );

    await sql`create or replace function parley_lead_words_customer_changed() returns trigger language plpgsql as $$
      begin
        update lead_words set search_tsv = (select search_tsv from customers where id = new.customer_id) where lead_id = new.id;
        return null;
      end $$`.execute(db);
    await sql`create trigger leads_words_customer after update of customer_id on leads
      for each row when (old.customer_id is distinct from new.customer_id) execute function parley_lead_words_customer_changed()`.execute(
      db,
    );
  },
};
