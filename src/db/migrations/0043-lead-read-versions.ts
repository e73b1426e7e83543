import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/** The tables a lead list answer reads (leads.repo.ts: the page, its joins, filters and tags). */
export const LEAD_READ_TABLES = ['leads', 'customers', 'integrations', 'messages', 'lead_tags', 'tags', 'sources'] as const;

/**
 * Per-account versions of what lead lists read. The database bumps them in
 * the transaction of every write to those tables, whichever process or tool writes, so the lead
 * read cache (read-cache.ts) can tell by one cheap read whether an account's answers still hold,
 * and writes to other accounts no longer empty it.
 *
 * A row per account and PostgreSQL backend (`backend` is `pg_backend_pid()`; always 0 on SQLite,
 * whose writers take turns anyway): concurrent transactions never wait on each other's version
 * row, and a transaction touching two accounts cannot deadlock on them. An account's version is
 * the sum of its rows: every value only grows and snapshots are nested, so two equal sums mean the
 * same set of committed writes.
 */
export const leadReadVersions: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('lead_read_versions')
      .addColumn('account_id', kit.bigint, (c) => c.notNull())
      .addColumn('backend', 'integer', (c) => c.notNull())
      .addColumn('version', kit.bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('lead_read_versions_pk', ['account_id', 'backend'])
      .execute();

    if (kit.dialect === 'sqlite') {
      for (const table of LEAD_READ_TABLES) {
        for (const [op, row] of [
          ['insert', 'new'],
          ['update', 'new'],
          ['delete', 'old'],
        ] as const) {
          await sql`create trigger ${sql.raw(`${table}_read_version_${op}`)} after ${sql.raw(op)} on ${sql.table(table)} begin
            insert into lead_read_versions (account_id, backend, version) values (${sql.raw(row)}.account_id, 0, 1)
            on conflict (account_id, backend) do update set version = version + 1; end`.execute(db);
        }
      }
      return;
    }

    await sql`create or replace function parley_lead_read_version() returns trigger language plpgsql as $$
      begin
        insert into lead_read_versions (account_id, backend, version)
          values (case when tg_op = 'DELETE' then old.account_id else new.account_id end, pg_backend_pid(), 1)
          on conflict (account_id, backend) do update set version = lead_read_versions.version + 1;
        return null;
      end $$`.execute(db);
    for (const table of LEAD_READ_TABLES) {
      await sql`create trigger ${sql.raw(`${table}_read_version`)} after insert or update or delete on ${sql.table(table)}
        for each row execute function parley_lead_read_version()`.execute(db);
    }
  },
};
