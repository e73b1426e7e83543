import crypto from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { isPostgresUrl } from '../../src/config.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import type { Database } from '../../src/db/schema.js';
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js';

export const DIALECT: 'sqlite' | 'postgres' = isPostgresUrl(process.env.DATABASE_URL) ? 'postgres' : 'sqlite';

/** A logger that says nothing, for the parts of the core a test drives without a server. */
export const quietLog = { info() {}, warn() {}, error() {}, debug() {} };

/** A bare account row (no owner, no seeds), for tests of the tables under the domain core. */
export async function insertAccount(t: TestDatabase): Promise<number> {
  const row = await t.db.kysely
    .insertInto('accounts')
    .values({ name: 'a', plan: '{}', created_at: 0 })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface TestDatabase {
  db: Db;
  /** A DATABASE_URL that reaches this same database (for the CLI and child processes), if any. */
  url: string | undefined;
  drop(): Promise<void>;
}

/**
 * A clean, migrated database for one test file: SQLite in memory by default; with DATABASE_URL set
 * to PostgreSQL, a schema of its own that is dropped afterwards. `migrateTo`: only up to that
 * migration, through Kysely's migrator; `empty`: no migration at all; `onQuery`: called after each
 * statement.
 */
export async function createTestDatabase(
  opts: { dataDir?: string; migrateTo?: string; empty?: boolean; onQuery?: () => void } = {},
): Promise<TestDatabase> {
  const base = process.env.DATABASE_URL;
  const migrate = async (db: Db) => {
    if (opts.empty) return;
    await (opts.migrateTo ? migrateTo(db, opts.migrateTo) : migrateToLatest(db));
  };
  if (!isPostgresUrl(base)) {
    const db = await openDatabase({
      dataDir: opts.dataDir ?? '',
      sqliteFile: opts.dataDir ? 'parley.db' : ':memory:',
      onQuery: opts.onQuery,
    });
    await migrate(db);
    return { db, url: undefined, drop: () => db.close() };
  }
  const schema = `t_${crypto.randomBytes(6).toString('hex')}`;
  const admin = await openDatabase({ databaseUrl: base, dataDir: '', poolSize: 1 });
  const { sql } = await import('kysely');
  await sql.raw(`create schema ${schema}`).execute(admin.kysely);
  const url = withSearchPath(base, schema);
  const db = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 5, onQuery: opts.onQuery });
  await migrate(db);
  return {
    db,
    url,
    drop: async () => {
      await db.close();
      await sql.raw(`drop schema ${schema} cascade`).execute(admin.kysely);
      await admin.close();
    },
  };
}

function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

/**
 * Columns that today's code writes when it stores a message, added by migrations later than a
 * test's old schema: a test that stores messages with today's code into a database migrated only
 * part of the way (to check a later migration on what an earlier build stored) adds them for the
 * writes and drops them again, so that their migration adds them as it would on a real upgrade.
 */
const LATER_WRITTEN_COLUMNS: Array<{ table: string; column: string }> = [
  // migration 0135-responded-at
  { table: 'leads', column: 'responded_at' },
];

/** Runs `write` on a database migrated up to before `LATER_WRITTEN_COLUMNS`' migrations, with their columns there meanwhile. */
export async function withLaterColumns<T>(db: Kysely<Database>, write: () => Promise<T>): Promise<T> {
  for (const c of LATER_WRITTEN_COLUMNS) await sql.raw(`alter table ${c.table} add column ${c.column} bigint`).execute(db);
  try {
    return await write();
  } finally {
    for (const c of LATER_WRITTEN_COLUMNS) await sql.raw(`alter table ${c.table} drop column ${c.column}`).execute(db);
  }
}
