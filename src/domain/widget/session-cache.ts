import type { Db } from '../../db/database.js';
import type { WidgetVisitorRow } from '../../db/schema.js';
import type { IntegrationCache } from '../integrations/integration-cache.js';
import { findSessionVisitor, type SessionVisitor } from './widget.repo.js';

/**
 * Widget visitors' sessions as every visitor request reads them (each widget message among them),
 * kept in this process's memory on PostgreSQL: a session's visitor by its token's hash, and the
 * visitor's widget from the integration cache. The read was a statement per turn of the event
 * loop beside each ingest batch (docs/performance.md, issue 19 twenty-fourth pass). As
 * auth/user-cache.ts keeps employees' rows, a visitor is kept only while the database reports
 * every change to it and to its sessions (db/database.ts `RowChangeFeed`, migration 0075): a change
 * made through this process (new pre-chat fields, `last_seen_at`, a deletion) is forgotten before
 * the code that made it goes on; one made by another process as soon as this process hears its
 * notification, moments after its commit. A read that overlapped any change to a visitor keeps
 * nothing. SQLite, and a connection pooler in transaction mode (PARLEY_PG_USER_CACHE=off), read
 * every time.
 *
 * Kept rows are frozen; each caller gets its own copy.
 */
export class SessionCache {
  /** Visitors by their sessions' token hashes. */
  private readonly visitors = new Map<string, Readonly<WidgetVisitorRow>>();
  /** The token hashes kept for each visitor (a visitor may have several sessions). */
  private readonly tokens = new Map<number, Set<string>>();
  /** Moves on with every reported change: a read begun before one keeps nothing. */
  private epoch = 0;

  constructor(
    private readonly db: Db,
    private readonly integrations: IntegrationCache,
    private readonly maxSessions = 10_000,
  ) {
    db.changes?.subscribe('widget_visitors', (visitorId) => {
      this.epoch++;
      if (visitorId === undefined) {
        this.visitors.clear();
        this.tokens.clear();
      } else this.forget(visitorId);
    });
  }

  /**
   * The visitor of a session token's hash and its widget, as `findSessionVisitor` answers it:
   * undefined for an unknown token, or a widget that is deleted or of another account.
   */
  async find(tokenHash: string): Promise<SessionVisitor | undefined> {
    if (!this.keeping()) return findSessionVisitor(this.db.kysely, tokenHash);
    const visitor = this.visitors.get(tokenHash);
    if (visitor) {
      const integration = await this.integrations.live(visitor.integration_id);
      return integration && integration.account_id === visitor.account_id ? { visitor: { ...visitor }, integration } : undefined;
    }
    const epoch = this.epoch;
    const found = await findSessionVisitor(this.db.kysely, tokenHash);
    if (found && epoch === this.epoch && this.keeping()) this.keep(tokenHash, found.visitor);
    return found;
  }

  /** How many sessions are kept (tests, metrics). */
  get size(): number {
    return this.visitors.size;
  }

  private keeping(): boolean {
    return this.db.changes?.listening() === true;
  }

  private keep(tokenHash: string, visitor: WidgetVisitorRow): void {
    if (this.visitors.size >= this.maxSessions) {
      const [oldest, row] = this.visitors.entries().next().value as [string, WidgetVisitorRow];
      this.visitors.delete(oldest);
      const left = this.tokens.get(row.id);
      left?.delete(oldest);
      if (left?.size === 0) this.tokens.delete(row.id);
    }
    this.visitors.set(tokenHash, Object.freeze({ ...visitor }));
    let hashes = this.tokens.get(visitor.id);
    if (!hashes) {
      hashes = new Set();
      this.tokens.set(visitor.id, hashes);
    }
    hashes.add(tokenHash);
  }

  private forget(visitorId: number): void {
    for (const hash of this.tokens.get(visitorId) ?? []) this.visitors.delete(hash);
    this.tokens.delete(visitorId);
  }
}
