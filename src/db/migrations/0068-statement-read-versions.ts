import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';
import { LEAD_READ_TABLES } from './0043-lead-read-versions.js';

/**
 * PostgreSQL: the lead read versions (migration 0043) are bumped once per statement instead of once
 * per row. The ingest batch writes many messages and leads per statement;
 * a row trigger upserted the account's version row once for each of them, where once per account
 * and statement says the same (the version only needs to change when a write committed; its value
 * counts nothing). Statement triggers read the statement's rows from transition tables, one
 * trigger per operation (PostgreSQL allows transition tables only on single-event triggers); an
 * update bumps the accounts of the rows before and after it. SQLite keeps its row triggers: its
 * writes are one row per statement.
 */
export const statementReadVersions: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    const fn = (name: string, rows: string) =>
      sql`create or replace function ${sql.raw(name)}() returns trigger language plpgsql as $$
        begin
          insert into lead_read_versions (account_id, backend, version)
            select distinct account_id, pg_backend_pid(), 1 from (${sql.raw(rows)}) as changed
            on conflict (account_id, backend) do update set version = lead_read_versions.version + 1;
          return null;
        end $$`.execute(db);
    await fn('parley_read_version_inserted', 'select account_id from new_rows');
    await fn('parley_read_version_updated', 'select account_id from new_rows union all select account_id from old_rows');
    await fn('parley_read_version_deleted', 'select account_id from old_rows');
    for (const table of LEAD_READ_TABLES) {
      await sql`drop trigger if exists ${sql.raw(`${table}_read_version`)} on ${sql.table(table)}`.execute(db);
      for (const [op, referencing, fnName] of [
        ['insert', 'new table as new_rows', 'parley_read_version_inserted'],
        ['update', 'old table as old_rows new table as new_rows', 'parley_read_version_updated'],
        ['delete', 'old table as old_rows', 'parley_read_version_deleted'],
      ] as const) {
        await sql`create trigger ${sql.raw(`${table}_read_version_${op}`)} after ${sql.raw(op)} on ${sql.table(table)}
          referencing ${sql.raw(referencing)} for each statement execute function ${sql.raw(fnName)}()`.execute(db);
      }
    }
    await sql`drop function if exists parley_lead_read_version()`.execute(db);
  },
};
