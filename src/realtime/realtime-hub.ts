import type { EventRow, LeadRow } from '../db/schema.js';
import { generationOf, type AuthContext } from '../domain/auth/auth-context.js';
import { liveTokenGenerations } from '../domain/auth/tokens.repo.js';
import { sessionsSignal } from '../domain/auth/sessions-signal.js';
import type { Deps } from '../domain/context.js';
import { canSeeLeadRow, canUseIntegration, leadScopeSql, scopeOf, type Scope } from '../domain/policy/policy.js';
import { OutboxTail } from '../events/outbox-tail.js';
import { isInternalEvent } from '../events/event-types.js';
import type { BackgroundWorker } from '../domain/workers.js';

/** Events a reconnecting client may catch up on in one go; older gaps get `{type: "reset"}`. */
export const CATCH_UP_MAX = 1000;
/** How often open sockets are checked against their users' sessions (ended in another process). */
const SESSION_CHECK_MS = 2_000;

type LeadVisibility = Pick<LeadRow, 'id' | 'account_id' | 'integration_id' | 'user_id' | 'status_type'>;

interface Subscriber {
  accountId: number;
  userId: number;
  /** The token generation the socket authenticated with; another one means its sessions ended. */
  gen: number;
  scope: Scope;
  send(message: string): void;
  /** Closes the socket: its employee's sessions ended or the employee was removed. */
  end(): void;
  /** Live events with ids above this reach the subscriber; lower ones came from its catch-up. */
  since: number;
  /** Live events held while the catch-up is being sent; null once live. */
  buffer: EventRow[] | null;
}

/**
 * The realtime fan-out of one process: the committed events of the outbox (events/outbox-tail.ts)
 * reach each subscriber its employee may see (docs/api/auth.md visibility, via domain/policy).
 * Sockets whose employee signed out everywhere, was reset or removed are closed (checkSessions).
 */
export class RealtimeHub implements BackgroundWorker {
  readonly name = 'realtime';
  private readonly subs = new Set<Subscriber>();
  private readonly tail: OutboxTail;
  private sessionTimer: NodeJS.Timeout | undefined;
  private readonly onSessionsEnded = (accountId: number, userId: number) => {
    for (const sub of this.subs) if (sub.accountId === accountId && sub.userId === userId) this.endSub(sub);
  };

  constructor(
    private readonly deps: Deps,
    opts: { pgListenUrl?: string } = {},
  ) {
    const consumer = {
      name: 'realtime',
      active: () => this.subs.size > 0,
      handle: (rows: EventRow[]) => this.dispatch([...this.subs], rows),
    };
    this.tail = new OutboxTail(deps, consumer, opts);
  }

  /**
   * Registers a subscriber: first what it missed after `lastEventId` (from the outbox), then live
   * events. Returns the function that ends the subscription.
   */
  async subscribe(
    auth: AuthContext,
    send: (message: string) => void,
    lastEventId?: number,
    end: () => void = () => {},
  ): Promise<() => void> {
    const scope = await scopeOf(this.deps.db.kysely, auth);
    await this.tail.ensureStarted();
    this.watchSessions();
    // Bring the cursor up to what is committed now, so the catch-up covers everything before it.
    await this.tail.poll();
    const seenAbove = new Set(this.tail.seen);
    const sub: Subscriber = {
      accountId: auth.accountId,
      userId: auth.userId,
      gen: generationOf(auth.user),
      scope,
      send,
      end,
      since: this.tail.cursor,
      buffer: [],
    };
    this.subs.add(sub);
    const unsubscribe = () => {
      this.subs.delete(sub);
    };
    try {
      if (lastEventId !== undefined) await this.catchUp(sub, lastEventId, seenAbove);
      // Live events that arrived during the catch-up go straight to this subscriber: dispatching
      // them would put them back in the buffer, a loop that never yields to I/O.
      while (sub.buffer?.length) {
        const held = sub.buffer.splice(0);
        await this.deliver(sub, held);
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
    return this.tail.poll();
  }

  healthy(): boolean {
    return this.tail.running;
  }

  async stop(): Promise<void> {
    clearInterval(this.sessionTimer);
    this.sessionTimer = undefined;
    sessionsSignal.off('ended', this.onSessionsEnded);
    await this.tail.stop();
    this.subs.clear();
  }

  /**
   * Closes the sockets whose employee is gone, unconfirmed, or signed out since they connected
   * (its token generation moved on). Runs on the in-process notice and every SESSION_CHECK_MS, so a
   * session ended in another process closes the sockets here within seconds.
   */
  async checkSessions(): Promise<void> {
    const subs = [...this.subs];
    if (!subs.length) return;
    const live = await liveTokenGenerations(this.deps.db.kysely, [...new Set(subs.map((s) => s.userId))]);
    for (const sub of subs) if (live.get(sub.userId) !== sub.gen) this.endSub(sub);
  }

  /** From the first subscriber on: the in-process notice of ended sessions, and the periodic check. */
  private watchSessions(): void {
    if (this.sessionTimer) return;
    sessionsSignal.on('ended', this.onSessionsEnded);
    this.sessionTimer = setInterval(() => {
      void this.checkSessions().catch((err) => this.deps.log.warn({ err }, 'realtime session check failed'));
    }, SESSION_CHECK_MS);
    this.sessionTimer.unref();
  }

  private endSub(sub: Subscriber): void {
    if (!this.subs.delete(sub)) return;
    try {
      sub.end();
    } catch (err) {
      this.deps.log.debug({ err }, 'realtime close failed');
    }
  }

  private async catchUp(sub: Subscriber, lastEventId: number, seenAbove: Set<number>): Promise<void> {
    const upto = Math.max(sub.since, ...seenAbove);
    const rows = (
      await this.deps.db.kysely
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
    await this.deliver(sub, rows.reverse(), false);
  }

  private async dispatch(subs: Subscriber[], rows: EventRow[]): Promise<void> {
    for (const sub of subs) {
      const mine = rows.filter((r) => r.account_id === sub.accountId && r.id > sub.since);
      if (!mine.length) continue;
      if (sub.buffer) sub.buffer.push(...mine);
      else await this.deliver(sub, mine);
    }
  }

  /**
   * Sends the rows the subscriber may see. Internal events are skipped, except a visitor's typing,
   * which becomes `{type:"typing", leadId, typing, from:"visitor"}` when it comes live (`live`):
   * an indicator is worth nothing later, so a catch-up never replays one; `integration.changed`,
   * a state the app reloads, sent live and in a catch-up alike; and a lead passing the
   * first-response target, which becomes `{type:"notification", ...}` for the employee it names,
   * live and on catch-up.
   */
  private async deliver(sub: Subscriber, rows: EventRow[], live = true): Promise<void> {
    const leads = await this.leadsOf(rows);
    for (const row of rows) {
      const typing = row.type === 'widget.visitor.typing';
      const overdue = row.type === 'lead.response.overdue' && overdueFor(row) === sub.userId;
      const passed = !isInternalEvent(row.type) || (typing && live) || row.type === 'integration.changed' || overdue;
      if (!passed || !(await this.visible(sub.scope, row, leads))) continue;
      try {
        const message = typing
          ? typingMessage(row)
          : overdue
            ? overdueMessage(row)
            : { type: 'event', id: row.id, event: JSON.parse(row.payload) as unknown };
        sub.send(JSON.stringify(message));
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

/** The employee a `lead.response.overdue` names. */
function overdueFor(row: EventRow): number | undefined {
  const { userId } = JSON.parse(row.payload) as { userId?: unknown };
  return typeof userId === 'number' ? userId : undefined;
}

/** A lead passing the first-response target (`lead.response.overdue`) as its employee's stream shows it. */
function overdueMessage(row: EventRow) {
  const p = JSON.parse(row.payload) as { leadId: number; awaitingSince: number; targetMinutes: number };
  return {
    type: 'notification',
    id: row.id,
    notification: { kind: 'firstResponseOverdue', leadId: p.leadId, awaitingSince: p.awaitingSince, targetMinutes: p.targetMinutes },
  };
}

/** A visitor's typing (`widget.visitor.typing`) as the employees' stream shows it. */
function typingMessage(row: EventRow): { type: 'typing'; leadId: number | null; typing: boolean; from: 'visitor' } {
  const payload = JSON.parse(row.payload) as { typing?: unknown };
  return { type: 'typing', leadId: row.lead_id, typing: payload.typing !== false, from: 'visitor' };
}
