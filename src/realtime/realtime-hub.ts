
import { isPostgresUrl } from '../config.js';
import type { EventRow, LeadRow } from '../db/schema.js';
import type { AuthContext } from '../domain/auth/auth.service.js';
import type { Deps } from '../domain/context.js';
import { canSeeLeadRow, canUseIntegration, leadScopeSql, scopeOf, type Scope } from '../domain/policy/policy.js';
import { onOutbox } from '../webhooks/wakeup.js';
import type { BackgroundWorker } from '../domain/workers.js';

/** Events a reconnecting client may catch up on in one go; older gaps get `{type: "reset"}`. */
export const CATCH_UP_MAX = 1000;
const BATCH = 500;
const GAP_WAIT_MS = 10_000;

type LeadVisibility = Pick<LeadRow, 'id' | 'account_id' | 'integration_id' | 'user_id' | 'status_type'>;

interface Subscriber {
  accountId: number;
  scope: Scope;
  send(message: string): void;
  /** Live events with ids above this reach the subscriber; lower ones came from its catch-up. */
  since: number;
  /** Live events held while the catch-up is being sent; null once live. */
  buffer: EventRow[] | null;
}

/**
 * The realtime fan-out of one process. It tails the `events` table (the outbox) by id: woken by
 * the in-process nudge of recordEvent, by LISTEN/NOTIFY on PostgreSQL when configured, and by a
 * poll every PARLEY_EVENTS_POLL_MS. Reading committed rows (never the nudge's content) is how
 * events reach subscribers only after their transaction committed. Each subscriber gets the
 * events its employee may see (decisions.md §2 visibility, via domain/policy).
 */
export class RealtimeHub implements BackgroundWorker {
  readonly name = 'realtime';
  private readonly subs = new Set<Subscriber>();
  /** Every event id up to here has been dispatched (or given up as a rolled-back gap). */
  private cursor = 0;
  /** Ids above `cursor` already dispatched: on PostgreSQL ids may commit out of order. */
  private readonly seen = new Set<number>();
  private gapSince: number | undefined;
  private starting: Promise<void> | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private pollAgain = false;
  private stopped = false;

  constructor(
    private readonly deps: Deps,
    private opts: { pgListenUrl?: string } = {},
  ) {
    if (!opts.pgListenUrl && isPostgresUrl(deps.config.databaseUrl)) this.opts = { pgListenUrl: deps.config.databaseUrl };
  }

  /**
   * Registers a subscriber: first what it missed after `lastEventId` (from the outbox), then live
   * events. Returns the function that ends the subscription.
   */
  async subscribe(auth: AuthContext, send: (message: string) => void, lastEventId?: number): Promise<() => void> {
    const scope = await scopeOf(this.deps.db.kysely, auth);
    await this.ensureStarted();
    // Bring the cursor up to what is committed now, so the catch-up covers everything before it.
    await this.poll();
    const seenAbove = new Set(this.seen);
    const sub: Subscriber = { accountId: auth.accountId, scope, send, since: this.cursor, buffer: [] };
    this.subs.add(sub);
    const unsubscribe = () => {
      this.subs.delete(sub);
    };
    try {
      if (lastEventId !== undefined) await this.catchUp(sub, lastEventId, seenAbove);
      while (sub.buffer && sub.buffer.length) {
        const held = sub.buffer.splice(0);
        await this.dispatch([sub], held);
      }
      sub.buffer = null;
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /** Subscribers currently connected (tests, metrics). */
  get size(): number {
    return this.subs.size;
  }

  /** Reads and dispatches what was committed since the last look; resolves when that is done. */
  poll(): Promise<void> {
    if (this.current) {
      this.pollAgain = true;
      return this.current;
    }
    this.current = this.runPoll().finally(() => {
      this.current = undefined;
    });
    return this.current;
  }

  private async runPoll(): Promise<void> {
    do {
      this.pollAgain = false;
      if (!this.subs.size) {
        this.cursor = Math.max(this.cursor, await this.maxId());
        this.seen.clear();
        continue;
      }
      const rows = await this.deps.db.kysely
        .selectFrom('events')
        .selectAll()
        .where('id', '>', this.cursor)
        .orderBy('id')
        .limit(BATCH)
        .execute();
      const fresh = rows.filter((r) => !this.seen.has(r.id));
      for (const r of fresh) this.seen.add(r.id);
      this.advance();
      if (fresh.length) await this.dispatch([...this.subs], fresh);
      if (rows.length === BATCH && fresh.length) this.pollAgain = true;
    } while (this.pollAgain && !this.stopped);
  }

  healthy(): boolean {
    return !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.unsubscribe?.();
    this.subs.clear();
  }

  /**
   * Moves the cursor over contiguous dispatched ids. A hole (an id not visible yet) is waited for
   * GAP_WAIT_MS: on PostgreSQL a transaction that took its id earlier may commit later; after that
   * the id is taken to belong to a rolled-back transaction.
   */
  private advance(): void {
    while (this.seen.has(this.cursor + 1)) this.seen.delete(++this.cursor);
    if (!this.seen.size) {
      this.gapSince = undefined;
      return;
    }
    const now = Date.now();
    this.gapSince ??= now;
    if (now - this.gapSince >= GAP_WAIT_MS) {
      this.cursor = Math.min(...this.seen) - 1;
      this.gapSince = undefined;
      this.advance();
    }
  }

  private ensureStarted(): Promise<void> {
    this.starting ??= (async () => {
      this.cursor = await this.maxId();
      const wake = () => void this.poll().catch((err) => this.deps.log.warn({ err }, 'realtime poll failed'));
      this.unsubscribe = onOutbox(wake, { pgUrl: this.opts.pgListenUrl, log: this.deps.log });
      this.timer = setInterval(wake, this.deps.config.eventsPollMs);
      this.timer.unref();
    })();
    return this.starting;
  }

  private async maxId(): Promise<number> {
    const row = await this.deps.db.kysely
      .selectFrom('events')
      .select((eb) => eb.fn.max('id').as('id'))
      .executeTakeFirst();
    return row?.id == null ? 0 : Number(row.id);
  }

  private async catchUp(sub: Subscriber, lastEventId: number, seenAbove: Set<number>): Promise<void> {
    const upto = Math.max(sub.since, ...seenAbove);
    const rows = (await this.deps.db.kysely
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', sub.accountId)
      .where('id', '>', lastEventId)
      .where('id', '<=', upto)
      .orderBy('id', 'desc')
      .limit(CATCH_UP_MAX + 1)
      .execute()
    ).filter((r) => r.id <= sub.since || seenAbove.has(r.id));
    if (rows.length > CATCH_UP_MAX) {
      // Too far behind: the client reloads its state instead of replaying history.
      sub.send(JSON.stringify({ type: 'reset', lastEventId: sub.since }));
      return;
    }
    await this.deliver(sub, rows.reverse());
  }

  private async dispatch(subs: Subscriber[], rows: EventRow[]): Promise<void> {
    for (const sub of subs) {
      const mine = rows.filter((r) => r.account_id === sub.accountId && r.id > sub.since);
      if (!mine.length) continue;
      if (sub.buffer) sub.buffer.push(...mine);
      else await this.deliver(sub, mine);
    }
  }

  private async deliver(sub: Subscriber, rows: EventRow[]): Promise<void> {
    const leads = await this.leadsOf(rows);
    for (const row of rows) {
      if (!(await this.visible(sub.scope, row, leads))) continue;
      try {
        sub.send(JSON.stringify({ type: 'event', id: row.id, event: JSON.parse(row.payload) }));
      } catch (err) {
        this.deps.log.debug({ err }, 'realtime send failed');
      }
    }
  }

  private async leadsOf(rows: EventRow[]): Promise<Map<number, LeadVisibility>> {
    const ids = [...new Set(rows.flatMap((r) => (r.lead_id === null ? [] : [r.lead_id])))];
    if (!ids.length) return new Map();
    const leads = await this.deps.db.kysely
      .selectFrom('leads')
      .select(['id', 'account_id', 'integration_id', 'user_id', 'status_type'])
      .where('id', 'in', ids)
      .execute();
    return new Map(leads.map((l) => [l.id, l]));
  }

  /**
   * Lead-bound events: the lead as it is now must be visible. Integration events: the integration
   * must be in reach. Customer events: the employee must see one of the customer's leads.
   */
  private async visible(scope: Scope, row: EventRow, leads: Map<number, LeadVisibility>): Promise<boolean> {
    if (row.account_id !== scope.accountId) return false;
    if (row.lead_id !== null) {
      const lead = leads.get(row.lead_id);
      return lead !== undefined && canSeeLeadRow(scope, lead);
    }
    const payload = JSON.parse(row.payload) as { integrationId?: number; customerId?: number };
    if (row.type.startsWith('integration.')) {
      return typeof payload.integrationId === 'number' && canUseIntegration(scope, payload.integrationId);
    }
    const rule = leadScopeSql(scope);
    if (!rule) return true;
    if (!row.type.startsWith('customer.') || typeof payload.customerId !== 'number') return false;
    const hit = await this.deps.db.kysely
      .selectFrom('leads')
      .select('leads.id')
      .where('leads.customer_id', '=', payload.customerId)
      .where('leads.account_id', '=', scope.accountId)
      .where(rule)
      .limit(1)
      .executeTakeFirst();
    return hit !== undefined;
  }
}

