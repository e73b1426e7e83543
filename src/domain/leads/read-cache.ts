import type { DialectName, Executor } from '../../db/database.js';
import { postgresSnapshot, sqliteDataVersion } from './leads.repo.js';

/**
 * Answers of lead reads (list pages, totals) remembered while the database has not changed.
 * Agents poll the same lists far more often than leads change, and a total costs one step per
 * matching index entry. A cheap probe tells whether anything at all was committed since, by this
 * process or any other one, so an answer is reused only while it is exactly what the query would
 * return:
 * - SQLite: `total_changes()` and `data_version` (rolled-back writes of this connection included);
 * - PostgreSQL: the snapshot of a read-only REPEATABLE READ transaction (`pg_current_snapshot()`:
 *   xmin, xmax and the transactions in progress). Two equal snapshots see exactly the same rows,
 *   since every commit or rollback of a writing transaction, in any database of the server, moves
 *   xmax or leaves the in-progress list. The reads of a miss run in that same transaction, so what
 *   is remembered is what that snapshot sees (and a page and its total agree). A hit needs no
 *   transaction: one statement's snapshot equal to the remembered one is enough.
 *
 * Cached values are shared between requests: callers must not mutate them.
 */
export class LeadReadCache {
  private version = '';
  private readonly values = new Map<string, unknown>();

  constructor(
    private readonly dialect: DialectName,
    private readonly maxEntries = 500,
  ) {}

  /**
   * Runs `body` with a view that answers each read from what was remembered for the database as it
   * is now, or computes it (the compute function gets the executor to use) and remembers it.
   * `body` reads the database only through the view.
   */
  async read<T>(db: Executor, body: (cache: CacheView) => Promise<T>): Promise<T> {
    if (this.dialect !== 'postgres') return body(this.viewAt(await sqliteDataVersion(db), db));
    // One statement's snapshot equal to the remembered one: every read can be answered from
    // memory, without the three statements of a transaction (most list polls, while nothing changes).
    if (this.values.size) {
      const seen = await postgresSnapshot(db);
      if (seen === this.version) {
        try {
          return await body(this.rememberedAt(seen));
        } catch (err) {
          if (err !== MISS) throw err;
        }
      }
    }
    return db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => body(this.viewAt(await postgresSnapshot(trx), trx)));
  }

  /** A view for the database version `seen` (what the probe answered), computing through `db`. */
  viewAt(seen: string, db: Executor): CacheView {
    if (seen !== this.version) {
      this.values.clear();
      this.version = seen;
    }
    return {
      get: async <V>(key: string, compute: (db: Executor) => Promise<V>): Promise<V> => {
        if (this.version === seen && this.values.has(key)) return this.values.get(key) as V;
        const value = await compute(db);
        // Another request may have seen another version meanwhile: then this value may be outdated.
        if (this.version === seen) {
          if (this.values.size >= this.maxEntries) this.values.clear();
          this.values.set(key, value);
        }
        return value;
      },
    };
  }

  /** A view that answers only what is remembered for `seen`, and throws MISS for anything else. */
  private rememberedAt(seen: string): CacheView {
    return {
      get: async <V>(key: string): Promise<V> => {
        if (this.version === seen && this.values.has(key)) return this.values.get(key) as V;
        throw MISS;
      },
    };
  }
}

const MISS = Symbol('read cache miss');

export interface CacheView {
  get<V>(key: string, compute: (db: Executor) => Promise<V>): Promise<V>;
}

/** A cache key naming a compiled query exactly (text and parameters). */
export function queryKey(kind: string, compiled: { sql: string; parameters: readonly unknown[] }): string {
  return `${kind}\u0000${compiled.sql}\u0000${JSON.stringify(compiled.parameters)}`;
}
