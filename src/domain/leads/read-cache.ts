import type { DialectName, Executor } from '../../db/database.js';
import { sqliteDataVersion } from './leads.repo.js';

/**
 * Answers of lead reads (list pages, totals) remembered while the database has not changed.
 * Agents poll the same lists far more often than leads change, and a total costs one step per
 * matching index entry. On the embedded SQLite database a cheap probe tells whether anything at
 * all was written since (by this process, rolled-back writes included, or by any other one), so
 * an answer is reused only while it is exactly what the query would return. PostgreSQL has no
 * such probe across connections: there every read runs.
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
   * Probes the database version once; the view's `get` answers from what was remembered for that
   * version, or computes and remembers.
   */
  async view(db: Executor): Promise<CacheView> {
    if (this.dialect !== 'sqlite') return { get: (_key, compute) => compute() };
    const seen = await sqliteDataVersion(db);
    if (seen !== this.version) {
      this.values.clear();
      this.version = seen;
    }
    return {
      get: async <T>(key: string, compute: () => Promise<T>): Promise<T> => {
        if (this.version === seen && this.values.has(key)) return this.values.get(key) as T;
        const value = await compute();
        // Another request may have seen a newer version meanwhile: then this value may predate it.
        if (this.version === seen) {
          if (this.values.size >= this.maxEntries) this.values.clear();
          this.values.set(key, value);
        }
        return value;
      },
    };
  }
}

export interface CacheView {
  get<T>(key: string, compute: () => Promise<T>): Promise<T>;
}

/** A cache key naming a compiled query exactly (text and parameters). */
export function queryKey(kind: string, compiled: { sql: string; parameters: readonly unknown[] }): string {
  return `${kind}\u0000${compiled.sql}\u0000${JSON.stringify(compiled.parameters)}`;
}
