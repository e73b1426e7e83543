import fs from 'node:fs';
import path from 'node:path';
import { Kysely, SqliteDialect, PostgresDialect, sql, type SqliteDatabase } from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import type { Database } from './schema.js';
import { isPostgresUrl } from '../config.js';

export type DialectName = 'sqlite' | 'postgres';

/** The one query layer over either dialect. Repositories take `Db['kysely']` or a transaction. */
export interface Db {
  kysely: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
}

export type Executor = Kysely<Database>;

export interface DatabaseOptions {
  databaseUrl?: string;
  /** Folder of the SQLite file; ignored on PostgreSQL. */
  dataDir: string;
  /** SQLite file name inside dataDir, or ':memory:'. */
  sqliteFile?: string;
  poolSize?: number;
  /** SQLite: write per-statement timings to this file on close (PARLEY_SQL_PROFILE). */
  sqlProfile?: string;
}

export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  if (isPostgresUrl(options.databaseUrl)) return openPostgres(options.databaseUrl, options.poolSize ?? 10);
  return openSqlite(options.dataDir, options.sqliteFile ?? 'parley.db', options);
}

async function openSqlite(dataDir: string, file: string, options: DatabaseOptions): Promise<Db> {
  const { default: SQLite } = await import('better-sqlite3');
  let location = file;
  if (file !== ':memory:') {
    fs.mkdirSync(dataDir, { recursive: true });
    location = path.join(dataDir, file);
  }
  const native = new SQLite(location);
  // WAL keeps readers off the writer's back; NORMAL sync is durable across process crashes
  // (a power loss may drop the last commits: docs/operations.md).
  native.pragma('journal_mode = WAL');
  native.pragma('synchronous = NORMAL');
  native.pragma('foreign_keys = ON');
  native.pragma('busy_timeout = 5000');
  // Used by the customer search index triggers (migration 0010); PostgreSQL has a SQL function.
  native.function('parley_digits', { deterministic: true }, (value: unknown) =>
    typeof value === 'string' ? value.replace(/[^0-9]/g, '') : '',
  );
  // 16 MiB of page cache (the default is 2 MiB): list and search pages stay in memory.
  native.pragma('cache_size = -16000');
  const profile = options.sqlProfile ? new StatementProfile(options.sqlProfile) : undefined;
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(native, profile) }) });
  return {
    kysely,
    dialect: 'sqlite',
    close: async () => {
      await kysely.destroy();
      profile?.write();
    },
  };
}

/**
 * PARLEY_SQL_PROFILE=<file> (SQLite): time spent in each statement, by SQL text, written as JSON
 * when the database closes. A debugging aid for the performance work (docs/performance.md).
 */
class StatementProfile {
  private readonly totals = new Map<string, { calls: number; ms: number }>();

  constructor(private readonly file: string) {}

  time<T>(text: string, run: () => T): T {
    const started = performance.now();
    try {
      return run();
    } finally {
      let entry = this.totals.get(text);
      if (!entry) this.totals.set(text, (entry = { calls: 0, ms: 0 }));
      entry.calls++;
      entry.ms += performance.now() - started;
    }
  }

  write(): void {
    const rows = [...this.totals].map(([sql, t]) => ({ ms: Math.round(t.ms), calls: t.calls, usPerCall: Math.round((t.ms * 1000) / t.calls), sql }));
    rows.sort((a, b) => b.ms - a.ms);
    fs.writeFileSync(this.file, JSON.stringify(rows, null, 1));
  }
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; preparing costs more than running most of ours. Statements are
 * kept by SQL text (least recently used out first). SQLite re-prepares a statement by itself when
 * the schema changes. Streaming queries get a statement of their own: an iterating statement is
 * busy until the iteration ends.
 */
function withStatementCache(native: BetterSqlite3.Database, profile?: StatementProfile): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  const statement = (text: string) => {
    let stmt = cache.get(text);
    if (stmt) {
      cache.delete(text);
    } else {
      stmt = native.prepare(text);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    }
    cache.set(text, stmt);
    return stmt;
  };
  return {
    close: () => native.close(),
    prepare(text: string) {
      const stmt = statement(text);
      if (profile) {
        return {
          reader: stmt.reader,
          all: (parameters) => profile.time(text, () => stmt.all(parameters as unknown[])),
          run: (parameters) => profile.time(text, () => stmt.run(parameters as unknown[])),
          iterate: (parameters) => native.prepare(text).iterate(parameters as unknown[]),
        };
      }
      return {
        reader: stmt.reader,
        all: (parameters) => stmt.all(parameters as unknown[]),
        run: (parameters) => stmt.run(parameters as unknown[]),
        iterate: (parameters) => native.prepare(text).iterate(parameters as unknown[]),
      };
    },
  };
}

async function openPostgres(url: string, max: number): Promise<Db> {
  const pg = (await import('pg')).default;
  // int8 (counts, bigint ids and millisecond instants) as numbers; they stay below 2^53.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max });
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    dialect: 'postgres',
    close: () => kysely.destroy(),
  };
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
