import { isPostgresUrl } from '../config.js';
import type { EventRow } from '../db/schema.js';
import type { Executor } from '../db/database.js';
import type { Deps } from '../domain/context.js';
import { onOutbox } from './wakeup.js';
import { prepared } from '../db/prepared.js';

const BATCH = 500;
const GAP_WAIT_MS = 10_000;

/** Prepared (named on PostgreSQL): each consumer of each process runs it at every wake. */
const eventsAfter = prepared((db, p: { cursor: number; limit: number }) =>
  db.selectFrom('events').selectAll().where('id', '>', p.cursor).orderBy('id').limit(p.limit),
);

/**
 * Reads the committed events of the outbox in id order, for one consumer of this process (the
 * employees' realtime stream, the visitors' sockets). Woken by the in-process nudge of recordEvent,
 * by LISTEN/NOTIFY on PostgreSQL when configured, and by a poll every PARLEY_EVENTS_POLL_MS.
 * Reading committed rows (never the nudge's content) is how a consumer sees an event only after
 * its transaction committed. While the consumer has nobody to serve (`active()` false) the cursor
 * just follows the newest id: on every `poll()` and timer tick, and on a nudge only once a poll
 * interval (see `wake`). A consumer that can tell it has nothing to do (`newestWhenIdle`: no rule,
 * no subscription) is asked as often, and its cursor passes the events over unread.
 */
export class OutboxTail {
  /** Every event id up to here has been handed over (or given up as a rolled-back gap). */
  cursor = 0;
  /** Ids above `cursor` already handed over: on PostgreSQL ids may commit out of order. */
  readonly seen = new Set<number>();
  private gapSince: number | undefined;
  private starting: Promise<void> | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private pollAgain = false;
  /** A poll asked for by a caller or the timer (not a nudge): it follows the newest id even without anybody to serve. */
  private follow = false;
  /** When the cursor last followed the newest id without anybody to serve (ms, `performance.now()`). */
  private followedAt = Number.NEGATIVE_INFINITY;
  private stopped = false;
  /** The consumer's `newestWhenIdle` last answered that it had nothing to do. */
  private nothingToDo = false;
  private readonly pgListenUrl: string | undefined;
  private readonly resumeFrom: (() => Promise<number>) | undefined;
  private readonly settleMs: number;
  private settling: NodeJS.Timeout | undefined;

  constructor(
    private readonly deps: Deps,
    private readonly consumer: {
      name: string;
      active(): boolean;
      handle(rows: EventRow[]): Promise<void>;
      /**
       * Asked before each read: an id when the consumer has no work for any event up to it (its
       * rules or subscriptions want none); the cursor then moves there without reading the events,
       * and `skipped` is told. Every process runs each consumer for every process's events, so what
       * an event costs a consumer with nothing to do for it is paid once per process.
       */
      newestWhenIdle?(): Promise<number | undefined>;
      skipped?(cursor: number): Promise<void>;
    },
    /**
     * `settleMs`: a nudge reads after this long rather than at once, so that a consumer whose work
     * costs per read (a transaction, its context) rather than per event gets the events committed
     * meanwhile in the same read instead of one read per event.
     */
    opts: { pgListenUrl?: string; resumeFrom?: () => Promise<number>; settleMs?: number } = {},
  ) {
    this.resumeFrom = opts.resumeFrom;
    this.settleMs = opts.settleMs ?? 0;
    this.pgListenUrl = opts.pgListenUrl ?? (isPostgresUrl(deps.config.databaseUrl) ? deps.config.databaseUrl : undefined);
  }

  /** Reads and hands over what was committed since the last look; resolves when that is done. */
  poll(): Promise<void> {
    this.follow = true;
    return this.wake();
  }

  /**
   * A poll for a nudge (an event recorded here, a NOTIFY of another process's). Without anybody to
   * serve it reads nothing unless the cursor last followed the newest id a poll interval ago: each
   * process's idle consumers would otherwise read once per batch of every process, a cost that grows
   * with the number of processes (docs/performance.md "Several processes").
   */
  private wake(): Promise<void> {
    if (this.current) {
      this.pollAgain = true;
      return this.current;
    }
    if (!this.follow && !this.busy() && !this.followDue()) return Promise.resolve();
    this.current = this.runPoll().finally(() => {
      this.current = undefined;
    });
    return this.current;
  }

  /**
   * Starts listening (once): the cursor begins at the newest committed event, or where a consumer
   * that keeps its place in the database (`resumeFrom`) left off.
   */
  ensureStarted(): Promise<void> {
    this.starting ??= (async () => {
      this.cursor = this.resumeFrom ? await this.resumeFrom() : await this.maxId();
      const failed = (err: unknown) => this.deps.log.warn({ err }, `${this.consumer.name} poll failed`);
      const wake = () => void this.wake().catch(failed);
      const timed = () => void this.poll().catch(failed);
      const nudged = this.settleMs
        ? () => {
            if (!this.busy() && !this.followDue()) return;
            this.settling ??= setTimeout(() => {
              this.settling = undefined;
              wake();
            }, this.settleMs);
          }
        : wake;
      this.unsubscribe = onOutbox(nudged, { pgUrl: this.pgListenUrl, log: this.deps.log });
      this.timer = setInterval(timed, this.deps.config.eventsPollMs);
      this.timer.unref();
    })();
    return this.starting;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.settling);
    await this.unsubscribe?.();
  }

  get running(): boolean {
    return !this.stopped;
  }

  private async runPoll(): Promise<void> {
    do {
      this.pollAgain = false;
      const follow = this.follow;
      this.follow = false;
      if (!this.consumer.active()) {
        if (!follow && !this.followDue()) continue;
        this.followedAt = performance.now();
        this.cursor = Math.max(this.cursor, await this.maxId());
        this.seen.clear();
        continue;
      }
      // A consumer that had nothing to do is asked again on a poll or a nudge a poll interval
      // later, not at every nudge: the events meanwhile stay unread until it answers.
      if (this.nothingToDo && !follow && !this.followDue()) continue;
      const idleTo = await this.consumer.newestWhenIdle?.();
      this.nothingToDo = idleTo !== undefined;
      if (idleTo !== undefined) {
        this.followedAt = performance.now();
        this.cursor = Math.max(this.cursor, idleTo);
        this.seen.clear();
        this.gapSince = undefined;
        await this.consumer.skipped?.(this.cursor);
        continue;
      }
      const rows = await eventsAfter(this.deps.db.kysely, { cursor: this.cursor, limit: BATCH });
      const fresh = rows.filter((r) => !this.seen.has(r.id));
      for (const r of fresh) this.seen.add(r.id);
      this.advance();
      if (fresh.length) await this.consumer.handle(fresh);
      if (rows.length === BATCH && fresh.length) this.pollAgain = true;
    } while (this.pollAgain && !this.stopped);
  }

  /**
   * Moves the cursor over contiguous handed-over ids. A hole (an id not visible yet) is waited for
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

  /** Whether a nudge reads at once: the consumer serves somebody and, when asked, had work. */
  private busy(): boolean {
    return this.consumer.active() && !this.nothingToDo;
  }

  /** Whether a nudge makes an idle consumer's cursor follow the newest id: once a poll interval. */
  private followDue(): boolean {
    return performance.now() - this.followedAt >= this.deps.config.eventsPollMs;
  }

  maxId(): Promise<number> {
    return maxEventId(this.deps.db.kysely);
  }
}

/** The newest event id committed (and, in a transaction, its own), 0 when none. */
export async function maxEventId(db: Executor): Promise<number> {
  const row = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return row?.id == null ? 0 : Number(row.id);
}
