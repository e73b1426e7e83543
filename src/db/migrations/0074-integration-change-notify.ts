import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: every change to an integration's row (update, delete, also by cascade; truncate) is
 * announced on the `parley_integrations` channel as `<schema>.<id>` (`<schema>.*` for a truncate),
 * as migration 0069 announces employees' rows, so that the processes which keep integrations'
 * rows in memory for provider webhooks forget them (domain/integrations/integration-cache.ts,
 * db/database.ts `RowChangeFeed`). Integrations change seldom (connecting, a status, a setting,
 * a deletion); no hot path writes them, so the NOTIFY's lock at commit costs the hot paths
 * nothing. An insert is not announced: only rows that were found are kept. The trigger function
 * takes its channel as the trigger's argument, for any table keyed by `id`.
 */
export const integrationChangeNotify: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_row_changed() returns trigger language plpgsql as $$
      begin
        perform pg_notify(tg_argv[0], tg_table_schema || '.' || case when tg_op = 'TRUNCATE' then '*' else old.id::text end);
        return null;
      end $$`.execute(db);
    await sql`create trigger integrations_changed after update or delete on integrations
      for each row execute function parley_row_changed('parley_integrations')`.execute(db);
    await sql`create trigger integrations_truncated after truncate on integrations
      for each statement execute function parley_row_changed('parley_integrations')`.execute(db);
  },
};
