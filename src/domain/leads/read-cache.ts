import type { DialectName, Executor } from '../../db/database.js';
import { approximateBytes, cacheTotals, measureCache, type CacheSize } from '../../metrics/cache-stats.js';
import { metrics } from '../../metrics/metrics.js';
import { leadReadVersion } from './leads.repo.js';

/**
 * Answers of lead reads (list pages, totals) remembered while the account's data has not changed.
 * Agents poll the same lists far more often than leads change, and a total costs one step per
 * matching index entry. Each answer is remembered with the version of its account (migration
 * 0043: counters the database bumps in the transaction of every write to the tables a list reads,
 * by this process or any other one), and reused only while that version holds, so it is exactly
 * what the query would return. Writes to other accounts leave an account's answers alone.
 *
 * On PostgreSQL the reads of a miss run in one read-only REPEATABLE READ transaction that first
 * reads the version: what is remembered is what that snapshot sees (and a page and its total
 * agree). A hit needs no transaction: one statement reading the same version is enough. SQLite
 * has one connection whose transactions exclude other statements, so the version read just before
 * the reads cannot be older than what they see.
 *
 * Bounded by entries and by their estimated bytes (JSON size), the oldest forgotten first; an
 * answer larger than a quarter of the bound is not kept. Cached values are shared between
 * requests: callers must not mutate them.
 */
export class LeadReadCache {
  private readonly entries = new Map<string, { accountId: number; version: number; value: unknown; bytes: number }>();
  /** Entries remembered per account: with none, a read goes straight to its transaction. */
  private readonly perAccount = new Map<number, number>();
  private bytesHeld = 0;
  private readonly counted = cacheTotals('lead_reads');

  constructor(
    private readonly dialect: DialectName,
    private readonly maxEntries = 500,
    private readonly maxBytes = 16 * 1024 * 1024,
  ) {
    measureCache('lead_reads', this, (cache) => cache.held());
  }

  /** What is remembered now. */
  held(): CacheSize {
    return { entries: this.entries.size, bytes: this.bytesHeld };
  }

  /**
   * Runs `body` with a view that answers each read from what was remembered for the account's data
   * as it is now, or computes it (the compute function gets the executor to use) and remembers it.
   * `body` reads the database only through the view, and only data of `accountId`.
   */
  async read<T>(db: Executor, accountId: number, body: (cache: CacheView) => Promise<T>): Promise<T> {
    const misses = { n: 0 };
    if (this.dialect !== 'postgres') {
      return this.countRead(misses, await body(this.viewAt(accountId, await leadReadVersion(db, accountId), db, misses)));
    }
    // One statement reading a version that every read of `body` was remembered for: answered from
    // memory, without the three statements of a transaction (most list polls).
    if (this.perAccount.has(accountId)) {
      const seen = await leadReadVersion(db, accountId);
      try {
        const answered = { n: 0 };
        const answer = await body(this.rememberedAt(accountId, seen, answered));
        this.counted.hits += answered.n;
        return this.countRead(misses, answer);
      } catch (err) {
        if (err !== MISS) throw err;
      }
    }
    const answer = await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .setAccessMode('read only')
      .execute(async (trx) => body(this.viewAt(accountId, await leadReadVersion(trx, accountId), trx, misses)));
    return this.countRead(misses, answer);
  }

  /** Counts one read: a hit when every part of it came from memory. */
  private countRead<T>(misses: { n: number }, answer: T): T {
    metrics.leadReadCache.inc({ result: misses.n ? 'miss' : 'hit' });
    return answer;
  }

  /** A view for the account's version `seen` (what the probe answered), computing through `db`. */
  viewAt(accountId: number, seen: number, db: Executor, misses = { n: 0 }): CacheView {
    return {
      get: async <V>(key: string, compute: (db: Executor) => Promise<V>): Promise<V> => {
        const full = `${accountId}\u0000${key}`;
        const entry = this.entries.get(full);
        if (entry?.version === seen) {
          this.counted.hits++;
          return entry.value as V;
        }
        misses.n++;
        this.counted.misses++;
        const value = await compute(db);
        // Another request may have remembered a newer version meanwhile: keep the newer one.
        const now = this.entries.get(full);
        if (!now || now.version <= seen) {
          this.forget(full);
          this.remember(full, accountId, seen, value);
        }
        return value;
      },
    };
  }

  private remember(key: string, accountId: number, version: number, value: unknown): void {
    const bytes = approximateBytes(value);
    if (bytes > this.maxBytes / 4) return;
    while (this.entries.size && (this.entries.size >= this.maxEntries || this.bytesHeld + bytes > this.maxBytes)) {
      this.forget(this.entries.keys().next().value as string);
    }
    this.entries.set(key, { accountId, version, value, bytes });
    this.bytesHeld += bytes;
    this.perAccount.set(accountId, (this.perAccount.get(accountId) ?? 0) + 1);
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytesHeld -= entry.bytes;
    const left = (this.perAccount.get(entry.accountId) ?? 1) - 1;
    if (left) this.perAccount.set(entry.accountId, left);
    else this.perAccount.delete(entry.accountId);
  }

  /** A view that answers only what is remembered for `seen`, and throws MISS for anything else. */
  private rememberedAt(accountId: number, seen: number, answered: { n: number }): CacheView {
    return {
      get: async <V>(key: string): Promise<V> => {
        const entry = this.entries.get(`${accountId}\u0000${key}`);
        if (entry?.version !== seen) throw MISS;
        answered.n++;
        return entry.value as V;
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
