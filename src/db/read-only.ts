import fs from 'node:fs';
import path from 'node:path';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { isPostgresUrl } from '../config.js';
import type { Database } from './schema.js';
import type { Db } from './database.js';

/**
 * The configured database opened for reading only, for checks that must change nothing
 * (`parley doctor`): no folder or file is created, no migration runs, no LISTEN is set up. SQLite:
 * the existing file, opened read-only (undefined when there is none). PostgreSQL: one connection
 * whose transactions are read-only, and whose connect and statements give up after `timeoutMs`.
 */
export async function openReadOnlyDatabase(
  options: { databaseUrl: string | undefined; dataDir: string },
  timeoutMs: number,
): Promise<Db | undefined> {
  if (isPostgresUrl(options.databaseUrl)) return openPostgres(options.databaseUrl, timeoutMs);
  const file = sqliteFile(options.dataDir);
  if (!fs.existsSync(file)) return undefined;
  const { default: SQLite } = await import('better-sqlite3');
  const native = new SQLite(file, { readonly: true, fileMustExist: true, timeout: timeoutMs });
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: native }) });
  return { kysely, dialect: 'sqlite', close: () => kysely.destroy() };
}

/** Where the embedded database lives (db/database.ts opens the same file). */
export function sqliteFile(dataDir: string): string {
  return path.join(dataDir, 'parley.db');
}

async function openPostgres(url: string, timeoutMs: number): Promise<Db> {
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  pool.on('error', () => {});
  // Queued ahead of the first query on the connection: everything after it is read-only.
  pool.on('connect', (client) => {
    client.query(`set session characteristics as transaction read only; set statement_timeout = ${Math.ceil(timeoutMs)}`).catch(() => {});
  });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return { kysely, dialect: 'postgres', close: () => kysely.destroy() };
}
