import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: every change to a widget visitor's row and to its sessions' rows (update, delete, also
 * by cascade; truncate) is announced on the `parley_widget_visitors` channel as
 * `<schema>.<visitor id>`, as migration 0069 announces employees' rows, so that the processes which
 * keep visitors' sessions in memory for the widget's requests forget them
 * (domain/widget/session-cache.ts, db/database.ts `RowChangeFeed`). A statement that changes more
 * than 100 visitors (an account's deletion) announces `<schema>.*` once instead, as a truncate does:
 * every listening connection of every process would otherwise hear each visitor. A visitor's row
 * changes when its pre-chat fields do and, to the minute, as it writes (`last_seen_at`): each such
 * statement takes the NOTIFY's lock at its commit, a statement of its own outside the ingest's
 * transactions. A new visitor or session is not announced: only sessions that were found are kept.
 */
export const widgetVisitorChangeNotify: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_widget_visitor_changed() returns trigger language plpgsql as $$
      declare
        ids bigint[];
      begin
        if tg_op = 'TRUNCATE' then
          perform pg_notify('parley_widget_visitors', tg_table_schema || '.*');
          return null;
        end if;
        if tg_table_name = 'widget_sessions' then
          select array_agg(visitor_id) into ids from (select distinct visitor_id from old_rows limit 101) s;
        else
          select array_agg(id) into ids from (select id from old_rows limit 101) s;
        end if;
        if cardinality(ids) > 100 then
          perform pg_notify('parley_widget_visitors', tg_table_schema || '.*');
        else
          perform pg_notify('parley_widget_visitors', tg_table_schema || '.' || id) from unnest(ids) as id;
        end if;
        return null;
      end $$`.execute(db);
    for (const table of ['widget_visitors', 'widget_sessions']) {
      for (const event of ['update', 'delete']) {
        await sql`create trigger ${sql.id(`${table}_${event}d`)} after ${sql.raw(event)} on ${sql.table(table)}
          referencing old table as old_rows for each statement execute function parley_widget_visitor_changed()`.execute(db);
      }
      await sql`create trigger ${sql.id(`${table}_truncated`)} after truncate on ${sql.table(table)}
        for each statement execute function parley_widget_visitor_changed()`.execute(db);
    }
  },
};
