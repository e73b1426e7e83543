import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: every change to an employee's row (update, delete, also by cascade; truncate) is
 * announced on the `parley_users` channel as `<schema>.<id>` (`<schema>.*` for a truncate; the
 * schema because channels are shared by the whole database, which several installations or test
 * schemas may share), so that the
 * processes which keep employees' rows in memory for the token check forget them
 * (domain/auth/user-cache.ts, db/database.ts `RowChangeFeed`). The NOTIFY takes PostgreSQL's notify
 * lock at commit; employees' rows change seldom (an invitation, a password, a role, a sign-out
 * everywhere), so that is no cost to the hot paths. SQLite has one process and keeps nothing.
 */
export const userChangeNotify: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`create or replace function parley_user_changed() returns trigger language plpgsql as $$
      begin
        if tg_op = 'TRUNCATE' then
          perform pg_notify('parley_users', tg_table_schema || '.*');
        else
          perform pg_notify('parley_users', tg_table_schema || '.' || old.id);
        end if;
        return null;
      end $$`.execute(db);
    await sql`create trigger users_changed after update or delete on users
      for each row execute function parley_user_changed()`.execute(db);
    await sql`create trigger users_truncated after truncate on users
      for each statement execute function parley_user_changed()`.execute(db);
  },
};
