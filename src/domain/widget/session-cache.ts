import type { Db } from '../../db/database.js';
import { KeptRows } from '../../db/kept-rows.js';
import type { WidgetVisitorRow } from '../../db/schema.js';
import type { IntegrationCache } from '../integrations/integration-cache.js';
import { findSessionVisitor, findVisitor, type SessionVisitor } from './widget.repo.js';

/**
 * Widget visitors' sessions as every visitor request reads them (each widget message among them),
 * kept in this process's memory on PostgreSQL: a session's visitor by its token's hash, and the
 * visitor's widget from the integration cache. The read was a statement per turn of the event
 * loop beside each ingest batch (docs/performance.md). As
 * auth/user-cache.ts keeps employees' rows, a visitor is kept only while the database reports
 * every change to it and to its sessions (db/database.ts `RowChangeFeed`, migration 0075): a change
 * made through this process (new pre-chat fields, `last_seen_at`, a deletion) is forgotten before
 * the code that made it goes on; one made by another process as soon as this process hears its
 * notification, moments after its commit. A read that overlapped any change to a visitor keeps
 * nothing. SQLite, and a connection pooler in transaction mode (PARLEY_PG_USER_CACHE=off), read
 * every time.
 *
 * Visitors are also kept by their widget and public id, for the check every employee's send to a
 * widget lead makes that its channel is still a visitor of the widget (`visitor`); the same
 * reported changes forget them (docs/performance.md).
 *
 * Kept rows are frozen; each caller gets its own copy.
 */
export class SessionCache {
  /** Visitors by their sessions' token hashes (a visitor may have several sessions). */
  private readonly visitors: KeptRows<string, WidgetVisitorRow>;
  /** Visitors by widget and public id (`integrationId NUL publicId`). */
  private readonly byPublicId: KeptRows<string, WidgetVisitorRow>;

  constructor(
    private readonly db: Db,
    private readonly integrations: IntegrationCache,
    maxSessions = 10_000,
  ) {
    this.visitors = new KeptRows(db, 'widget_visitors', maxSessions);
    this.byPublicId = new KeptRows(db, 'widget_visitors', maxSessions);
  }

  /** The visitor `publicId` of the widget `integrationId`, as `findVisitor` answers it (a copy). */
  async visitor(integrationId: number, publicId: string): Promise<WidgetVisitorRow | undefined> {
    if (!this.byPublicId.keeping()) return findVisitor(this.db.kysely, integrationId, publicId);
    const row = await this.byPublicId.find(`${integrationId}\u0000${publicId}`, () => findVisitor(this.db.kysely, integrationId, publicId));
    return row && { ...row };
  }

  /**
   * The visitor of a session token's hash and its widget, as `findSessionVisitor` answers it:
   * undefined for an unknown token, or a widget that is deleted or of another account.
   */
  async find(tokenHash: string): Promise<SessionVisitor | undefined> {
    if (!this.visitors.keeping()) return findSessionVisitor(this.db.kysely, tokenHash);
    // A read finds the widget with the visitor; a kept visitor's widget comes from the integration cache.
    let found: SessionVisitor | undefined;
    const visitor = await this.visitors.find(tokenHash, async () => {
      found = await findSessionVisitor(this.db.kysely, tokenHash);
      return found && { ...found.visitor };
    });
    if (found || !visitor) return found;
    const integration = await this.integrations.live(visitor.integration_id);
    return integration && integration.account_id === visitor.account_id ? { visitor: { ...visitor }, integration } : undefined;
  }

  /** How many sessions are kept (tests, metrics). */
  get size(): number {
    return this.visitors.size;
  }

  /** How many visitors are kept by public id (tests, metrics). */
  get publicIds(): number {
    return this.byPublicId.size;
  }
}
