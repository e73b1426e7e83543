import { sql } from 'kysely';
import type { Executor } from '../db/database.js';
import type { Logger } from '../domain/context.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { DELIVERIES_CHANNEL, outboxSignal, OUTBOX_CHANNEL } from './outbox.js';
import { joinOutboxNotify } from './wakeup.js';

/** The first NOTIFY after an event waits this long, so events of a burst share one. */
const FIRST_MS = 5;
/** Then at most one per this interval, and a last one this long after the last: the transactions
 *  of the events it announced have committed by then. */
const AGAIN_MS = 25;

/**
 * Wakes the other processes (PostgreSQL LISTEN/NOTIFY) when this process records events, without
 * NOTIFY inside the writing transactions: a transaction that notified takes PostgreSQL's global
 * notify lock at commit, one writer at a time across the whole server. Here the events recorded
 * within a few milliseconds share one NOTIFY per channel, sent on its own, and a second one a
 * little later covers the transactions that had not committed yet. `parley_outbox` wakes the
 * outbox readers (employees' stream, visitor pushes); `parley_deliveries`, only sent when some
 * event made webhook deliveries, wakes the delivery workers — so with no webhook registered, no
 * worker wakes or queries at all. Missed wake-ups are covered by every reader's poll. Channels are
 * the database's, so each NOTIFY names Parley's schema: the readers of another installation in the
 * same database (another schema, docs/operations.md) ignore it (events/wakeup.ts).
 *
 * With `listenUrl`, the processes on one database share one chain of NOTIFYs instead of one each:
 * a NOTIFY of parley_outbox that another process sent after this one's pending events were recorded
 * wakes every reader as this one's would, so this one leaves its own out (when none of the events
 * made deliveries, whose channel it does not hear). The NOTIFY after the last events of a chain
 * (the cover) is always sent, so each process's last events are announced after their commit as
 * before; events recorded after the other's NOTIFY are announced by the next one, this process's
 * or another's, within AGAIN_MS. A NOTIFY is told another's by its backend's process id: this
 * process's NOTIFYs answer theirs. NOTIFYs are heard on the LISTEN connection the process's readers
 * opened (events/wakeup.ts); a process without readers (the CLI) sends each of its own.
 */
export class OutboxNotifier implements BackgroundWorker {
  readonly name = 'outbox-notifier';
  /** Events recorded since the last NOTIFY (and whether one of them made deliveries). */
  private pending = false;
  private pendingDeliveries = false;
  /** When the first of the pending events was recorded (ms, `performance.now()`). */
  private pendingSince = 0;
  /** The backends this process's NOTIFYs were sent from (its pool's connections). */
  private readonly ownPids = new Set<number>();
  /** The latest NOTIFYs heard, by backend: told this process's from another's when they are used. */
  private readonly heard = new Map<number, number>();
  private unlisten: (() => Promise<void>) | undefined;
  private readonly listenUrl: string | undefined;
  /** NOTIFYs left out because another process's had announced the events. */
  skipped = 0;
  /** A NOTIFY went out for events whose transactions may not have committed: one more follows. */
  private cover: { deliveries: boolean } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly listener = (_id: number, deliveries: number) => this.recorded(deliveries);

  constructor(
    private readonly db: Executor,
    private readonly log: Logger,
    opts: { listenUrl?: string } = {},
  ) {
    outboxSignal.on('recorded', this.listener);
    this.listenUrl = opts.listenUrl;
  }

  /** Hears NOTIFYs on the process's LISTEN connection once one of its readers opened it. */
  private join(): void {
    if (this.unlisten || !this.listenUrl || this.stopped) return;
    this.unlisten = joinOutboxNotify(this.listenUrl, (pid) => this.heardFrom(pid), this.log);
  }

  private heardFrom(pid: number): void {
    // A few backends at most: this process's pool and the other processes' notifiers.
    if (this.heard.size >= 64 && !this.heard.has(pid)) this.heard.clear();
    this.heard.set(pid, performance.now());
  }

  /** Whether another process's NOTIFY was heard after `since`. */
  private othersNotifiedAfter(since: number): boolean {
    for (const [pid, at] of this.heard) if (at > since && !this.ownPids.has(pid)) return true;
    return false;
  }

  private recorded(deliveries: number): void {
    this.join();
    if (!this.pending) this.pendingSince = performance.now();
    this.pending = true;
    if (deliveries > 0) this.pendingDeliveries = true;
    if (!this.timer && !this.stopped) this.schedule(FIRST_MS);
  }

  /** One chain of timers at a time: `timer` stays set until its tick has sent its NOTIFY. */
  private schedule(ms: number): void {
    this.timer = setTimeout(() => void this.tick(), ms);
    this.timer.unref();
  }

  /**
   * At most one NOTIFY per AGAIN_MS while events keep coming, and one more after the last. Events
   * recorded while a NOTIFY is on its way wait for this chain's next tick: a chain of their own
   * would notify again at once, and under steady load chains would pile up (measured:
   * ~240 NOTIFYs/s from one process instead of ≤ 40).
   */
  private async tick(): Promise<void> {
    if (this.pending && !this.pendingDeliveries && this.othersNotifiedAfter(this.pendingSince)) {
      // Another process's NOTIFY announced them: this chain goes on only to send the cover.
      this.pending = false;
      this.skipped++;
      this.cover ??= { deliveries: false };
    } else if (this.pending) {
      this.cover = { deliveries: await this.flush() };
    } else if (this.cover) {
      const { deliveries } = this.cover;
      this.cover = undefined;
      await this.send(deliveries);
    }
    this.timer = undefined;
    if (!this.stopped && (this.pending || this.cover)) this.schedule(AGAIN_MS);
  }

  /** Sends what is pending now (tests call it to skip the wait); answers whether it woke the workers. */
  async flush(): Promise<boolean> {
    if (!this.pending) return false;
    const deliveries = this.pendingDeliveries;
    this.pending = false;
    this.pendingDeliveries = false;
    await this.send(deliveries);
    return deliveries;
  }

  private async send(deliveries: boolean): Promise<void> {
    if (this.stopped) return;
    try {
      const { rows } = deliveries
        ? await sql<{
            pid: number;
          }>`select pg_notify(${OUTBOX_CHANNEL}, current_schema()), pg_notify(${DELIVERIES_CHANNEL}, current_schema()), pg_backend_pid() as pid`.execute(
            this.db,
          )
        : await sql<{ pid: number }>`select pg_notify(${OUTBOX_CHANNEL}, current_schema()), pg_backend_pid() as pid`.execute(this.db);
      const pid = rows[0]?.pid;
      if (pid !== undefined) {
        if (this.ownPids.size >= 256) this.ownPids.clear();
        this.ownPids.add(pid);
      }
    } catch (err) {
      this.log.debug({ err }, 'outbox NOTIFY failed; readers poll');
    }
  }

  healthy(): boolean {
    return !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    outboxSignal.off('recorded', this.listener);
    clearTimeout(this.timer);
    await this.unlisten?.();
  }
}
