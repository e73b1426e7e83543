import { approximateBytes, cacheTotals, measureCache, type CacheSize } from '../metrics/cache-stats.js';
import type { ChangedTable, Db } from './database.js';

/**
 * Rows of a table kept in this process's memory, each only while the database reports every change
 * to it (PostgreSQL, `RowChangeFeed`): what auth/user-cache.ts, integrations/integration-cache.ts
 * and widget/session-cache.ts keep. Rows are kept by a key (their id, or a session's token hash)
 * and forgotten by the id a reported change names (a change of anything: every row); a read that
 * any reported change overlapped keeps nothing; with no listening connection nothing is kept and
 * every look-up reads. At most `maxRows` rows and `maxBytes` of them (their JSON size), the oldest
 * forgotten first; look-ups and sizes are in the metrics as `kept_<table>`. Kept rows are frozen.
 */
export class KeptRows<K, R extends { id: number }> {
  private readonly rows = new Map<K, { row: Readonly<R>; bytes: number }>();
  private bytesHeld = 0;
  private readonly counted: { hits: number; misses: number };
  /** The keys each row id is kept under. */
  private readonly keysOf = new Map<number, Set<K>>();
  /** Moves on with every reported change: a read begun before one keeps nothing. */
  private epoch = 0;

  constructor(
    private readonly db: Db,
    table: ChangedTable,
    private readonly maxRows = 10_000,
    private readonly maxBytes = 8 * 1024 * 1024,
  ) {
    this.counted = cacheTotals(`kept_${table}`);
    measureCache(`kept_${table}`, this, (kept) => kept.held());
    db.changes?.subscribe(table, (id) => {
      this.epoch++;
      if (id === undefined) {
        this.rows.clear();
        this.keysOf.clear();
        this.bytesHeld = 0;
      } else {
        for (const key of this.keysOf.get(id) ?? []) this.drop(key);
        this.keysOf.delete(id);
      }
    });
  }

  /** Whether rows may be kept now (PostgreSQL, with at least one pooled connection listening). */
  keeping(): boolean {
    return this.db.changes?.listening() === true;
  }

  /** The row kept under `key`, or what `read` finds (kept when no change overlapped it). */
  async find(key: K, read: () => Promise<R | undefined>): Promise<Readonly<R> | undefined> {
    const kept = this.rows.get(key);
    if (kept) {
      this.counted.hits++;
      return kept.row;
    }
    this.counted.misses++;
    const epoch = this.epoch;
    const row = await read();
    if (row && epoch === this.epoch && this.keeping()) this.keep(key, row);
    return row;
  }

  get size(): number {
    return this.rows.size;
  }

  /** Rows kept now and their estimated bytes. */
  held(): CacheSize {
    return { entries: this.rows.size, bytes: this.bytesHeld };
  }

  private drop(key: K): void {
    const kept = this.rows.get(key);
    if (!kept) return;
    this.rows.delete(key);
    this.bytesHeld -= kept.bytes;
  }

  private keep(key: K, row: R): void {
    const bytes = approximateBytes(row);
    if (bytes > this.maxBytes / 4) return;
    this.drop(key);
    while (this.rows.size && (this.rows.size >= this.maxRows || this.bytesHeld + bytes > this.maxBytes)) {
      const [oldest, old] = this.rows.entries().next().value as [K, { row: R }];
      this.drop(oldest);
      const keys = this.keysOf.get(old.row.id);
      keys?.delete(oldest);
      if (keys?.size === 0) this.keysOf.delete(old.row.id);
    }
    this.rows.set(key, { row: Object.freeze(row), bytes });
    this.bytesHeld += bytes;
    let keys = this.keysOf.get(row.id);
    if (!keys) {
      keys = new Set();
      this.keysOf.set(row.id, keys);
    }
    keys.add(key);
  }
}
