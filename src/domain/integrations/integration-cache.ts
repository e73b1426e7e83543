import type { Db } from '../../db/database.js';
import { kept } from '../../db/kept.js';
import { KeptRows } from '../../db/kept-rows.js';
import type { IntegrationRow } from '../../db/schema.js';
import { findIntegrationOfType, findIntegrationRowById, findLiveIntegrationById } from './integrations.repo.js';

/**
 * Integrations' rows as provider webhooks read them, by the id their URL names, on every delivery
 * (WhatsApp, Messenger, Instagram, Telegram, Viber and the social channels), kept in this process's
 * memory on PostgreSQL. The read was a statement per delivery, or per turn of the event loop once
 * batched: a round trip and PostgreSQL's work beside each ingest batch (docs/performance.md). As auth/user-cache.ts keeps employees' rows, a row is kept only
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
  private readonly rows: KeptRows<number, IntegrationRow>;

  constructor(
    private readonly db: Db,
    maxRows = 10_000,
  ) {
    this.rows = new KeptRows(db, 'integrations', maxRows);
  }

  /** A live integration by id whatever its account, as `findLiveIntegrationById` answers it. */
  async live(id: number): Promise<IntegrationRow | undefined> {
    if (!this.rows.keeping()) return findLiveIntegrationById(this.db.kysely, id);
    const row = await this.rows.find(id, () => findIntegrationRowById(this.db.kysely, id));
    return row && row.deleted_at === null ? { ...row } : undefined;
  }

  /** An integration of `type` by id whatever its account, deleted ones included, as `findIntegrationOfType` answers it. */
  async ofType(type: string, id: number): Promise<IntegrationRow | undefined> {
    if (!this.rows.keeping()) return findIntegrationOfType(this.db.kysely, type, id);
    const row = await this.rows.find(id, () => findIntegrationRowById(this.db.kysely, id));
    return row && row.type === type ? { ...row } : undefined;
  }

  /** How many rows are kept (tests, metrics). */
  get size(): number {
    return this.rows.size;
  }
}

const caches = new WeakMap<Db, IntegrationCache>();

/** The process's integration cache of `db`. */
export function integrationCache(db: Db): IntegrationCache {
  return kept(caches, db, () => new IntegrationCache(db));
}
