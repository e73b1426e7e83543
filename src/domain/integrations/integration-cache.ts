import type { Db } from '../../db/database.js';
import { kept } from '../../db/kept.js';
import type { IntegrationRow } from '../../db/schema.js';
import { findIntegrationOfType, findIntegrationRowById, findLiveIntegrationById } from './integrations.repo.js';

/**
 * Integrations' rows as provider webhooks read them, by the id their URL names, on every delivery
 * (WhatsApp, Messenger, Instagram, Telegram, Viber and the social channels), kept in this process's
 * memory on PostgreSQL. The read was a statement per delivery, or per turn of the event loop once
 * batched: a round trip and PostgreSQL's work beside each ingest batch (docs/performance.md,
 * issue 19 twenty-fourth pass). As auth/user-cache.ts keeps employees' rows, a row is kept only
 * while the database reports every change to it (db/database.ts `RowChangeFeed`, migration 0074):
 * a change made through this process (a deletion, a new status or token) is forgotten before the
 * code that made it goes on; one made by another process as soon as this process hears its
 * notification, moments after its commit, like a delivery that had arrived just before it. A read
 * that overlapped any change keeps nothing. SQLite, and a connection pooler in transaction mode
 * (PARLEY_PG_USER_CACHE=off), read every time.
 *
 * Kept rows are frozen; each caller gets its own copy.
 */
export class IntegrationCache {
  private readonly rows = new Map<number, Readonly<IntegrationRow>>();
  /** Moves on with every reported change: a read begun before one keeps nothing. */
  private epoch = 0;

  constructor(
    private readonly db: Db,
    private readonly maxRows = 10_000,
  ) {
    db.changes?.subscribe('integrations', (id) => {
      this.epoch++;
      if (id === undefined) this.rows.clear();
      else this.rows.delete(id);
    });
  }

  /** A live integration by id whatever its account, as `findLiveIntegrationById` answers it. */
  async live(id: number): Promise<IntegrationRow | undefined> {
    if (!this.keeping()) return findLiveIntegrationById(this.db.kysely, id);
    const row = await this.find(id);
    return row && row.deleted_at === null ? { ...row } : undefined;
  }

  /** An integration of `type` by id whatever its account, deleted ones included, as `findIntegrationOfType` answers it. */
  async ofType(type: string, id: number): Promise<IntegrationRow | undefined> {
    if (!this.keeping()) return findIntegrationOfType(this.db.kysely, type, id);
    const row = await this.find(id);
    return row && row.type === type ? { ...row } : undefined;
  }

  /** How many rows are kept (tests, metrics). */
  get size(): number {
    return this.rows.size;
  }

  private keeping(): boolean {
    return this.db.changes?.listening() === true;
  }

  private async find(id: number): Promise<Readonly<IntegrationRow> | undefined> {
    const kept = this.rows.get(id);
    if (kept) return kept;
    const epoch = this.epoch;
    const row = await findIntegrationRowById(this.db.kysely, id);
    if (row && epoch === this.epoch && this.keeping()) {
      if (this.rows.size >= this.maxRows) this.rows.delete(this.rows.keys().next().value as number);
      this.rows.set(id, Object.freeze(row));
    }
    return row;
  }
}

const caches = new WeakMap<Db, IntegrationCache>();

/** The process's integration cache of `db`. */
export function integrationCache(db: Db): IntegrationCache {
  return kept(caches, db, () => new IntegrationCache(db));
}
