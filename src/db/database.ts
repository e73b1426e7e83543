import fs from 'node:fs';
import path from 'node:path';
import {
  CompiledQuery,
  Kysely,
  SqliteDialect,
  SqliteQueryCompiler,
  PostgresAdapter,
  ValueNode,
  sql,
  type LimitNode,
  type LogEvent,
  type QueryCompiler,
  type SqliteDatabase,
} from 'kysely';
import type BetterSqlite3 from 'better-sqlite3';
import type { Database } from './schema.js';
import { isPostgresUrl } from '../config.js';
import { isStalePlan } from './errors.js';
import { registerSearchFunctions } from './search-functions.js';
import { SchemaPostgresDialect } from './introspector.js';
import { cacheTotals, measureCache } from '../metrics/cache-stats.js';

export type DialectName = 'sqlite' | 'postgres';

/** The one query layer over either dialect. Repositories take `Db['kysely']` or a transaction. */
export interface Db {
  kysely: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
  /** PostgreSQL: the pool's connections (metrics); absent on SQLite's single connection. */
  poolStats?(): { total: number; idle: number; waiting: number };
  /** PostgreSQL with named statements on: changes to the rows processes keep in memory, as `RowChangeFeed` says. */
  changes?: RowChangeFeed;
  /**
   * SQLite: runs a script of several statements on the one connection, in the transaction under
   * way if any (the schema snapshot, db/schema-snapshot.ts).
   */
  runScript?(text: string): void;
}

/**
 * The tables whose row changes are announced, each on its channel (migrations 0069, 0074 and 0075),
 * as `<schema>.<id>`, or `<schema>.*` when any row may have changed (a widget visitor's channel
 * also carries its sessions' changes, by the visitor's id).
 */
const CHANGE_CHANNELS = {
  users: 'parley_users',
  integrations: 'parley_integrations',
  widget_visitors: 'parley_widget_visitors',
} as const;
export type ChangedTable = keyof typeof CHANGE_CHANNELS;
const CHANNEL_TABLES = new Map<string, ChangedTable>(
  Object.entries(CHANGE_CHANNELS).map(([table, channel]) => [channel, table as ChangedTable]),
);

/**
 * Changes to the rows of `CHANGE_CHANNELS`' tables made by any process, for what this process keeps
 * of them in memory (auth/user-cache.ts, integrations/integration-cache.ts,
 * widget/session-cache.ts). Every pooled connection LISTENs on every channel before its first
 * query, and a session receives its own notifications before its commit completes: a change made
 * through this pool is reported before the code that made it goes on, and a change committed
 * elsewhere as soon as one of the pool's idle connections hears it (each listening connection
 * hears it: a change may be reported more than once). `listening()` is true only while at least
 * one pooled connection listens and none ever failed to: otherwise nothing may be kept.
 */
export class RowChangeFeed {
  private readonly listeners = new Set<(table: ChangedTable | undefined, id: number | undefined) => void>();
  /** Pooled connections whose LISTEN is under way (false) or done (true). */
  private readonly connections = new WeakMap<object, boolean>();
  private count = 0;
  private failed = false;
  /** The schema the connections' tables are in; until known, every change counts. */
  private schema: string | undefined;

  /**
   * `listener` hears the id of each changed row of `table`; `undefined`: anything may have changed
   * unheard, forget everything.
   */
  subscribe(table: ChangedTable, listener: (id: number | undefined) => void): () => void {
    const heard = (changed: ChangedTable | undefined, id: number | undefined) => {
      if (changed === undefined) listener(undefined);
      else if (changed === table) listener(id);
    };
    this.listeners.add(heard);
    return () => this.listeners.delete(heard);
  }

  listening(): boolean {
    return this.count > 0 && !this.failed;
  }

  /** A new pooled connection: LISTEN runs before anything else it is given to do. */
  connected(client: ListeningClient): void {
    this.connections.set(client, false);
    client.on('notification', (n) => {
      const table = CHANNEL_TABLES.get(n.channel);
      if (table) this.heard(table, n.payload ?? '');
    });
    const listen = [...CHANNEL_TABLES.keys()].map((channel) => `LISTEN ${channel}; `).join('');
    client.query(`${listen}select current_schema() as schema`).then(
      (results) => {
        this.schema = (results as Array<{ rows: Array<{ schema: string }> }>)[CHANNEL_TABLES.size]?.rows[0]?.schema;
        if (this.connections.get(client) !== false) return; // closed meanwhile
        this.connections.set(client, true);
        this.count++;
      },
      (err: unknown) => {
        // PostgreSQL refused (a hot standby, a pooler): this connection's own changes would go
        // unreported, so nothing is kept from now on. A connection that merely closed is no matter.
        if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') this.failed = true;
        this.emit(undefined, undefined);
      },
    );
  }

  /** `<schema>.<id>` or `<schema>.*` (migrations 0069, 0074, 0075): changes in other schemas are not this installation's. */
  private heard(table: ChangedTable, payload: string): void {
    const dot = payload.lastIndexOf('.');
    if (this.schema !== undefined && payload.slice(0, dot) !== this.schema) return;
    const id = Number(payload.slice(dot + 1));
    this.emit(table, Number.isSafeInteger(id) && payload.slice(dot + 1) !== '' ? id : undefined);
  }

  /** A pooled connection closed: with no listener left, changes would go unheard. */
  removed(client: object): void {
    const listened = this.connections.get(client);
    this.connections.delete(client);
    if (!listened) return;
    this.count--;
    if (this.count === 0) this.emit(undefined, undefined);
  }

  private emit(table: ChangedTable | undefined, id: number | undefined): void {
    for (const listener of this.listeners) listener(table, id);
  }
}

interface ListeningClient {
  on(event: 'notification', listener: (n: { channel: string; payload?: string }) => void): unknown;
  query(text: string): Promise<unknown>;
}

export type Executor = Kysely<Database>;

/**
 * Runs `fn` in a transaction whose every statement looks its rows up by key (ingest batches, an
 * employee's send). On PostgreSQL its named statements keep one generic plan per connection,
 * however their parameters compare with those they first ran with: PostgreSQL plans a statement
 * taking arrays for their lengths, estimates an array at 10 elements in a generic plan, and so for
 * a batch of fewer than about ten never kept one: it planned the batch's three statements at every
 * run, which cost more than running them (docs/performance.md). Sequential
 * scans are off as well, so a plan made while a table was small still looks rows up by key as it
 * grows: the batch's updates join arrays to `leads` and `sources`, and a kept plan hashing a scan of
 * a small `leads` read it whole at every batch once it had grown (`test/hot-path-plans.test.ts`).
 * The settings come with the begin, in one round trip, and end with the transaction. `trx` is the
 * transaction's connection: `fn` must not begin a transaction on it (Kysely's own transaction
 * object refuses to; this one would commit early). SQLite: a plain transaction.
 */
export async function keyedTransaction<T>(
  db: Executor,
  fn: (trx: Executor) => Promise<T>,
  options: { lock?: TransactionLock } = {},
): Promise<T> {
  if (dialectOf(db) !== 'postgres') return db.transaction().execute(fn);
  const { lock } = options;
  let begin = KEYED_BEGIN;
  let commit = 'commit';
  let rollback = 'rollback';
  if (lock) {
    const [a, b] = lock.key;
    if (!(isInt32(a) && isInt32(b) && Number.isInteger(lock.waitMs) && lock.waitMs > 0))
      throw new Error('a transaction lock is two 32-bit integers and a wait');
    const key = `${schemaLockKey(a)}, ${b}`;
    // The wait is bounded; the statements after it wait as the database is configured to.
    begin += `; set local lock_timeout = ${lock.waitMs}; select pg_advisory_lock(${key}); set local lock_timeout to default`;
    // A session's lock, let go by `fn`'s last statement under it (releaseLockSql), or else in the
    // commit's round trip before the commit itself: the next transaction naming it runs while this
    // one ends (see TransactionLock). The commit and the rollback let go of every advisory lock of
    // the session (Parley takes no other session-level one), silently when it was let go already:
    // by `fn`, by a failed commit, or never had by a begin that timed out.
    commit = 'select pg_advisory_unlock_all(); commit';
    rollback = 'rollback; select pg_advisory_unlock_all()';
  }
  return db.connection().execute(async (conn) => {
    // Like Kysely's own begin and commit: not seen by plugins (statement counters in the tests).
    const run = (text: string) => conn.getExecutor().withoutPlugins().executeQuery(CompiledQuery.raw(text));
    try {
      // A lock not had in time fails the begin with its transaction open: rolled back below too.
      await run(begin);
      const result = await fn(conn);
      await run(commit);
      return result;
    } catch (error) {
      // A failed commit has ended the transaction already; a rollback then only warns.
      await run(rollback).catch(() => {});
      throw error;
    }
  });
}

/**
 * PostgreSQL: the advisory lock (two keys) a {@link keyedTransaction} takes with its begin, in the
 * same round trip, and holds until its commit begins, or until the statement that carries
 * {@link releaseLockSql} ran: the transactions of every process on the database that name the same
 * lock run one at a time, each but for what follows the lock's release, which overlaps the next
 * one's start (docs/performance.md). So the lock orders
 * work; it guards no data: what the next transaction must not see before the commit, row locks
 * guard. A transaction that waited `waitMs` for it fails (lock_not_available) instead of waiting
 * on. The first key is taken in the connection's schema ({@link schemaLockKey}).
 */
export interface TransactionLock {
  key: readonly [number, number];
  waitMs: number;
}

/**
 * PostgreSQL: an SQL expression that lets go of a {@link keyedTransaction}'s `lock` when evaluated,
 * for the transaction's last statement under the lock to carry (once, in a scalar subquery): the
 * lock is then let go in that statement's round trip rather than in the commit's, one round trip
 * and this process's work in between earlier (docs/performance.md).
 * The commit lets go of the lock in any case, so a statement that does not evaluate it (no rows)
 * only keeps the lock until then.
 */
export function releaseLockSql(lock: TransactionLock): string {
  const [a, b] = lock.key;
  if (!isInt32(b)) throw new Error('an advisory lock key is a 32-bit integer');
  return `pg_advisory_unlock(${schemaLockKey(a)}, ${b})`;
}

/**
 * PostgreSQL: the SQL of an advisory lock's first key `key` in the connection's schema (Parley's
 * tables): advisory locks belong to the database, and installations in separate schemas of one
 * database (the test suite's files side by side) would otherwise wait for each other's locks.
 */
export function schemaLockKey(key: number): string {
  if (!isInt32(key)) throw new Error('an advisory lock key is a 32-bit integer');
  return `hashtext(current_schema()) # ${key}`;
}

const isInt32 = (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31;

/** The begin of {@link keyedTransaction} on PostgreSQL. */
const KEYED_BEGIN = 'begin; set local plan_cache_mode = force_generic_plan; set local enable_seqscan = off';

/** The dialect an executor (the database or one of its transactions) speaks. */
export function dialectOf(db: Executor): DialectName {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

export interface DatabaseOptions {
  databaseUrl?: string;
  /** Folder of the SQLite file; ignored on PostgreSQL. */
  dataDir: string;
  /** SQLite file name inside dataDir, or ':memory:'. */
  sqliteFile?: string;
  /** PostgreSQL: the most connections the pool opens (default 10; PARLEY_PG_POOL_SIZE). */
  poolSize?: number;
  /** SQLite: write per-statement timings to this file on close (PARLEY_SQL_PROFILE). */
  sqlProfile?: string;
  /** Called after every statement with its time in milliseconds (metrics); unset costs nothing. */
  onQuery?: (ms: number, failed: boolean) => void;
  /** PostgreSQL: run the hot-path queries as named prepared statements (default true; see `nameStatement`). */
  namedStatements?: boolean;
  /**
   * PostgreSQL: every pooled connection listens for changes to the rows processes keep in memory
   * (`RowChangeFeed`; default true). Not with named statements off: both need connections of their
   * own, not a pooler's in transaction mode.
   */
  rowChanges?: boolean;
  /** PostgreSQL: idle connections stay open (their named statements with them) instead of closing after 10 s. */
  keepIdle?: boolean;
}

export async function openDatabase(options: DatabaseOptions): Promise<Db> {
  if (isPostgresUrl(options.databaseUrl)) return openPostgres(options.databaseUrl, options.poolSize ?? 10, options);
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
  registerSearchFunctions(native);
  // 16 MiB of page cache (the default is 2 MiB): list and search pages stay in memory.
  native.pragma('cache_size = -16000');
  const profile = options.sqlProfile ? new StatementProfile(options.sqlProfile) : undefined;
  const database = withStatementCache(native, profile);
  const kysely = new Kysely<Database>({
    dialect: new ParleySqliteDialect({ database }),
    log: queryLog(options.onQuery),
  });
  return {
    kysely,
    dialect: 'sqlite',
    runScript: (text) => {
      try {
        native.exec(text);
      } finally {
        database.forget();
      }
    },
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
      if (!entry) {
        entry = { calls: 0, ms: 0 };
        this.totals.set(text, entry);
      }
      entry.calls++;
      entry.ms += performance.now() - started;
    }
  }

  write(): void {
    const rows = [...this.totals].map(([sql, t]) => ({
      ms: Math.round(t.ms),
      calls: t.calls,
      usPerCall: Math.round((t.ms * 1000) / t.calls),
      sql,
    }));
    rows.sort((a, b) => b.ms - a.ms);
    fs.writeFileSync(this.file, JSON.stringify(rows, null, 1));
  }
}

/**
 * SQLite runs `... order by id desc limit ?` ~15 us slower than the same query with a literal
 * limit (measured: the latest-lead lookup 23 us vs 9 us), so integer limits are written into the
 * SQL text. Our limits are a handful of constants and validated page sizes, so the statement cache
 * holds few variants.
 */
class LiteralLimitCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    const limit = node.limit;
    if (ValueNode.is(limit) && Number.isSafeInteger(limit.value)) {
      this.append(`limit ${limit.value as number}`);
      return;
    }
    super.visitLimit(node);
  }
}

class ParleySqliteDialect extends SqliteDialect {
  override createQueryCompiler(): QueryCompiler {
    return new LiteralLimitCompiler();
  }
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; preparing costs more than running most of ours. Statements are
 * kept by SQL text (least recently used out first), each with its wrappers, so a query allocates
 * nothing here. SQLite re-prepares a statement by itself when the schema changes; a schema change
 * made through this connection (create, alter, drop) also empties the cache, so the row builders
 * below follow it. Streaming queries get a statement of their own: an iterating statement is busy
 * until the iteration ends.
 */
function withStatementCache(native: BetterSqlite3.Database, profile?: StatementProfile): SqliteDatabase & { forget(): void } {
  type Prepared = ReturnType<SqliteDatabase['prepare']>;
  const cache = new Map<string, Prepared>();
  const counted = cacheTotals('sqlite_statements');
  measureCache('sqlite_statements', cache, (c) => ({ entries: c.size, bytes: 0 }));
  const create = (text: string): Prepared => {
    const stmt = native.prepare(text);
    const all = stmt.reader ? objectRows(stmt) : (parameters: readonly unknown[]) => stmt.all(parameters as unknown[]);
    let run = (parameters: readonly unknown[]) => stmt.run(parameters as unknown[]);
    if (!stmt.reader && SCHEMA_CHANGE.test(text)) {
      const change = run;
      run = (parameters) => {
        try {
          return change(parameters);
        } finally {
          cache.clear();
        }
      };
    }
    const iterate = (parameters: readonly unknown[]) => native.prepare(text).iterate(parameters as unknown[]);
    if (profile) {
      return {
        reader: stmt.reader,
        all: (parameters) => profile.time(text, () => all(parameters)),
        run: (parameters) => profile.time(text, () => run(parameters)),
        iterate,
      };
    }
    return { reader: stmt.reader, all, run, iterate };
  };
  return {
    close: () => native.close(),
    /** After a schema change made around the cache (`runScript`). */
    forget: () => cache.clear(),
    prepare(text: string) {
      let prepared = cache.get(text);
      if (prepared) {
        counted.hits++;
        cache.delete(text);
      } else {
        counted.misses++;
        prepared = create(text);
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      }
      cache.set(text, prepared);
      return prepared;
    },
  };
}

const SCHEMA_CHANGE = /^\s*(create|alter|drop)\b/i;

/**
 * Rows as objects made by a function compiled from the statement's column names: better-sqlite3
 * builds each row object key by key, which was half the CPU time of a 50-row history page
 * (select * of messages: 108 us, 57 us as arrays made into objects this way). Same keys
 * and values as better-sqlite3's objects (of duplicate names, the last column wins).
 */
function objectRows(stmt: BetterSqlite3.Statement): (parameters: readonly unknown[]) => unknown[] {
  let width = -1;
  let build: (row: unknown[]) => unknown = () => undefined;
  const compile = () => {
    const names = stmt.columns().map((c) => c.name);
    // `__proto__:` in a literal would set the prototype; the computed form makes a property.
    const fields = names.map((name, i) => `${name === '__proto__' ? '["__proto__"]' : JSON.stringify(name)}: r[${i}]`);
    build = new Function('r', `return { ${fields.join(', ')} };`) as typeof build;
    width = names.length;
  };
  stmt.raw(true);
  return (parameters) => {
    const rows = stmt.all(parameters as unknown[]) as unknown[][];
    // Another connection may have changed the table since this statement was compiled.
    if (rows.length && rows[0].length !== width) compile();
    const out = new Array<unknown>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = build(rows[i]);
    return out;
  };
}

/** Kysely's query log, timing each statement, only when someone listens. */
function queryLog(onQuery: DatabaseOptions['onQuery']) {
  if (!onQuery) return undefined;
  return (event: LogEvent) => onQuery(event.queryDurationMillis, event.level === 'error');
}

async function openPostgres(url: string, max: number, options: DatabaseOptions): Promise<Db> {
  const pg = (await import('pg')).default;
  // int8 (counts, bigint ids and millisecond instants) as numbers; they stay below 2^53.
  pg.types.setTypeParser(20, (v: string) => Number(v));
  const pool = new pg.Pool({ connectionString: url, max, ...(options.keepIdle ? { idleTimeoutMillis: 0 } : {}) });
  // An idle connection that fails (PostgreSQL restarted, the network cut) leaves the pool and the
  // next query opens a new one; unheard, the pool's 'error' event would end the process.
  pool.on('error', () => {});
  const named = options.namedStatements !== false;
  // Behind a pooler in transaction mode a LISTEN would not stay with the connection it ran on.
  const changes = named && options.rowChanges !== false ? new RowChangeFeed() : undefined;
  pool.on('connect', (client) => {
    if (named) useNamedStatements(client);
    changes?.connected(client);
  });
  if (changes) pool.on('remove', (client) => changes.removed(client));
  const kysely = new Kysely<Database>({ dialect: new SchemaPostgresDialect({ pool }), log: queryLog(options.onQuery) });
  return {
    kysely,
    dialect: 'postgres',
    close: () => kysely.destroy(),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    changes,
  };
}

/**
 * PostgreSQL: one connection of its own (opened again if it fails, kept while idle) for a
 * background loop whose statements run one after another, so that they neither wait for a pooled
 * connection behind the requests nor hold one from them. (Forcing generic plans for its whole
 * session instead of per claim transaction made the webhook worker slower: docs/performance.md.)
 */
export function openLoopConnection(url: string): Promise<Db> {
  return openPostgres(url, 1, { dataDir: '', rowChanges: false, namedStatements: true, keepIdle: true });
}

/**
 * The SQL texts of hot-path queries (db/prepared.ts), each with the name it is prepared under on
 * PostgreSQL. A named statement is parsed and analysed once per connection and then only bound and
 * run (PostgreSQL may also keep its plan): the ingest and read paths run a dozen of these per
 * request, and parsing them anew each time was a large share of the server's CPU per statement
 * (docs/performance.md). Only these few fixed texts are named, so the statements each
 * connection keeps stay bounded; every other query stays unnamed. PARLEY_PG_NAMED_STATEMENTS=off
 * runs them unnamed too, for a connection pooler in transaction mode that does not track prepared
 * statements (docs/operations.md).
 */
const statementNames = new Map<string, number>();
/**
 * Part of every statement name. A schema change can alter a kept statement's result columns
 * (`select *` of a table that gained a column), which PostgreSQL then refuses ("cached plan must
 * not change result type"); new names make every connection prepare each text again. Bumped after
 * Parley's own migrations ran and when PostgreSQL refused a kept statement (another process
 * migrated: a rolling upgrade).
 */
let statementGeneration = 0;

/** Marks `text` as a hot-path query to run as a named prepared statement on PostgreSQL. */
export function nameStatement(text: string): void {
  if (!statementNames.has(text)) statementNames.set(text, statementNames.size + 1);
}

/**
 * Runs `query` and answers its rows: on PostgreSQL as a named statement ({@link nameStatement}).
 * For texts fixed but for their values (no lists or shapes that change with them), so that the
 * statements each connection keeps stay few.
 */
export async function executeNamed<R>(db: Executor, query: CompiledQuery<R>): Promise<R[]> {
  if (dialectOf(db) === 'postgres') nameStatement(query.sql);
  return (await db.executeQuery(query)).rows;
}

/** Every connection prepares its named statements anew (after a schema change). */
export function renameStatements(): void {
  statementGeneration++;
}

interface QueryingClient {
  query: (...args: never[]) => unknown;
}

/**
 * Routes the hot-path texts of a pooled connection to named statements. When PostgreSQL refuses a
 * kept statement after a schema change, every name is renewed and the query runs again at once
 * under its new name; inside a transaction the refusal has aborted the transaction, and the
 * caller's retry (db/errors.ts `isStalePlan`) or the next request finds the new name.
 */
function useNamedStatements(client: QueryingClient): void {
  const query = client.query.bind(client) as (config: unknown, values?: unknown) => Promise<unknown>;
  const named = (index: number, text: string, values: unknown) => query({ name: `parley_${index}_${statementGeneration}`, text, values });
  client.query = ((config: unknown, values?: unknown) => {
    const index = typeof config === 'string' && typeof values !== 'function' ? statementNames.get(config) : undefined;
    if (index === undefined) return query(config, values);
    const text = config as string;
    return named(index, text, values).catch((error: unknown) => {
      if (!isStalePlan(error)) throw error;
      renameStatements();
      return named(index, text, values).catch(() => {
        throw error;
      });
    });
  }) as QueryingClient['query'];
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
