import type { ChangedTable, Db } from './database.js';

/**
 * Rows of a table kept in this process's memory by id, each only while the database reports every
 * change to it (PostgreSQL, `RowChangeFeed`): what auth/user-cache.ts and
 * integrations/integration-cache.ts keep. A reported change forgets its row (a change of anything,
 * every row); a read that any reported change overlapped keeps nothing; with no listening
 * connection nothing is kept and every look-up reads. At most `maxRows`, the oldest forgotten
 * first. Kept rows are frozen.
 */
export class KeptRows<R extends { id: number }> {
  private readonly rows = new Map<number, Readonly<R>>();
  /** Moves on with every reported change: a read begun before one keeps nothing. */
  private epoch = 0;

  constructor(
    private readonly db: Db,
    table: ChangedTable,
    private readonly maxRows = 10_000,
  ) {
    db.changes?.subscribe(table, (id) => {
      this.epoch++;
      if (id === undefined) this.rows.clear();
      else this.rows.delete(id);
    });
  }

  /** Whether rows may be kept now (PostgreSQL, with at least one pooled connection listening). */
  keeping(): boolean {
    return this.db.changes?.listening() === true;
  }

  /** The kept row `id`, or what `read` finds (kept when no change overlapped it). */
  async find(id: number, read: () => Promise<R | undefined>): Promise<Readonly<R> | undefined> {
    const kept = this.rows.get(id);
    if (kept) return kept;
    const epoch = this.epoch;
    const row = await read();
    if (row?.id === id && epoch === this.epoch && this.keeping()) {
      if (this.rows.size >= this.maxRows) this.rows.delete(this.rows.keys().next().value as number);
      this.rows.set(id, Object.freeze(row));
    }
    return row;
  }

  get size(): number {
    return this.rows.size;
  }
}
