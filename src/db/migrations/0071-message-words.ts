import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: each message's search words (its tsvector) in a narrow table of their own, keyed by
 * (integration, message), instead of a generated column of `messages`. Message search's first step
 * walks an integration's newest messages testing each one's words (src/domain/search/search.repo.ts
 * `messagePageWalking`; docs/performance.md): from the messages it read an
 * index entry, then looked the row up by key (a second index and a wide heap row) for every message
 * walked, ~1.2 us each; here the words sit in the row the walk's own index points to, and only the
 * page's matches are looked up (0.3-0.4 ms a search against 0.9-1.4 ms on the bench's 200k).
 *
 * Kept by triggers, so no writer has to know:
 * - a statement inserting messages copies their words once it has run (a statement trigger over
 *   its transition table: one insert for an ingest batch);
 * - a message whose text (or integration) changes gets its words again (a row trigger that fires
 *   only for that: edits are rare, status and read flags change often and never fire it);
 * - a statement deleting messages deletes their rows (a statement trigger; no foreign key, whose
 *   check would lock each new message's row as its words are written), and emptying `messages`
 *   (truncate) empties this table.
 * A message without words (attachments only) has no row. SQLite searches through its FTS5 tables
 * and does not need this.
 */
export const messageWords: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create table message_words (
      integration_id bigint not null,
      message_id bigint not null,
      search_tsv tsvector not null
    )`.execute(db);
    // In id order, as new messages will add theirs: an integration's rows are then read in the
    // table's order when walked newest first.
    await sql`insert into message_words (integration_id, message_id, search_tsv)
      select integration_id, id, search_tsv from messages where search_tsv <> ''::tsvector order by id`.execute(db);
    // The walk's order, and the key the triggers find a message's row by.
    await sql`alter table message_words add primary key (integration_id, message_id)`.execute(db);
    // The older matches (message search's second step).
    await sql`create index message_words_search_idx on message_words using gin (search_tsv)`.execute(db);
    // What search read before (migrations 0010, 0067); nothing else reads them.
    await sql`drop index if exists messages_integration_id_idx`.execute(db);
    await sql`drop index if exists messages_search_idx`.execute(db);
    await sql`alter table messages drop column search_tsv`.execute(db);

    // The words of a text, as migration 0010 computed them (parley_search_text: unaccented, lower
    // case, letters and digits).
    const words = (text: string) => `to_tsvector('simple'::regconfig, parley_search_text(${text}))`;
    // A trigger on messages and its function, which runs `body` (statements) and returns null.
    const trigger = async (name: string, on: string, body: string, declare = '') => {
      await sql
        .raw(`create or replace function parley_message_words_${name}() returns trigger language plpgsql as $$
          ${declare} begin ${body} return null; end $$`)
        .execute(db);
      await sql.raw(`create trigger messages_words_${name} ${on} execute function parley_message_words_${name}()`).execute(db);
    };
    await trigger(
      'inserted',
      'after insert on messages referencing new table as new_rows for each statement',
      `insert into message_words (integration_id, message_id, search_tsv)
        select w.integration_id, w.id, w.search_tsv
        from (select n.integration_id, n.id, ${words('n.text')} as search_tsv from new_rows n) as w
        where w.search_tsv <> ''::tsvector;`,
    );
    await trigger(
      'changed',
      `after update of text, integration_id on messages
        for each row when (old.text is distinct from new.text or old.integration_id <> new.integration_id)`,
      `delete from message_words where integration_id = old.integration_id and message_id = old.id;
        if tsv <> ''::tsvector then
          insert into message_words (integration_id, message_id, search_tsv) values (new.integration_id, new.id, tsv);
        end if;`,
      `declare tsv tsvector := ${words('new.text')};`,
    );
    await trigger(
      'deleted',
      'after delete on messages referencing old table as old_rows for each statement',
      'delete from message_words w using old_rows o where w.integration_id = o.integration_id and w.message_id = o.id;',
    );
    await trigger('truncated', 'after truncate on messages for each statement', 'truncate message_words;');
  },
};
