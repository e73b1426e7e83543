import { isPostgresUrl } from '../config.js';
import { metrics } from '../metrics/metrics.js';
import { systemClock, type Clock } from '../domain/clock.js';
import type { Deps } from '../domain/context.js';
import { openLoopConnection, type Db } from '../db/database.js';
import type { BackgroundWorker } from '../domain/workers.js';
import {
  claimDeliveries,
  nextDueAt,
  recordOutcomes,
  releaseClaims,
  type ClaimedDelivery,
  type ClaimRequest,
  type DeliveryOutcome,
} from './delivery-queue.js';
import { HttpSender, type SendResult } from './http-sender.js';
import { signatureHeaders } from './signing.js';
import { onOutbox } from '../events/wakeup.js';
import { EventBodies } from './event-bodies.js';
import {
  LIVENESS_CHECK_MS,
  LivenessLock,
  livenessKeyOf,
  newWorkerId,
  releaseDeadWorkersLeases,
  releaseEarlierRunsLeases,
} from './worker-liveness.js';

/** docs/api/webhooks.md: delays before each retry (ms), multiplied by PARLEY_WEBHOOK_RETRY_SCALE. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/** An endpoint failing for this long without one success is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000;
/** At most this many send outcomes recorded in one transaction. */
const RECORD_BATCH = 256;
/**
 * New deliveries while sends are out are claimed with the next finished send, or after this long:
 * an event is not worth a claim of its own while completions keep the loop going (under load the
 * claims of one per event cost more than the sends).
 */
const NUDGE_DELAY_MS = 5;
/** How long a round waits for more finished sends while few have finished (see `kick`). */
const GATHER_MS = 2;

export interface DeliveryWorkerOptions {
  /**
   * Identifies this worker's leases (`leased_by`). Liveness (worker-liveness.ts) covers ids of the
   * form newWorkerId() makes, the default.
   */
  id?: string;
  /** Real time for the `webhook-timestamp` header (receivers compare it with their own clock). */
  wallClock?: Clock;
  /**
   * PostgreSQL (default: the configured database): the URL of the worker's own connections, which
   * LISTEN for wake-ups from other processes, hold its liveness lock and run its claims and records.
   */
  pgListenUrl?: string;
}

type Job = ClaimedDelivery;

/** What a send's result makes of its delivery: delivered, retried later, or dead after the last retry. */
function outcomeState(job: Job, result: SendResult): DeliveryOutcome['state'] {
  if (result.error === null) return 'delivered';
  return RETRY_DELAYS_MS[job.attempts] === undefined ? 'dead' : 'retry';
}

/** A finished send waiting to be recorded; `settle` answers whoever awaits the record. */
interface Finished {
  job: Job;
  result: SendResult;
  /** Claimed by the loop (holds one of this process's slots until recorded). */
  slot: boolean;
  settle: (error?: unknown) => void;
}

/**
 * The webhook delivery worker: claims due deliveries with a lease, signs and POSTs them, records
 * every attempt, reschedules failures and disables endpoints failing for 5 days.
 *
 * - Claiming is one statement (delivery-queue.ts); on PostgreSQL candidate rows are locked
 *   `FOR UPDATE SKIP LOCKED`, so several processes never claim one delivery at once. A lease
 *   (`lease_until`) outlives the send timeout; if the process dies, the lease expires and any
 *   worker claims the delivery again (at-least-once).
 * - Order: a delivery is not claimed while an earlier delivery of the same webhook and lead is
 *   still pending (in flight or waiting for a retry).
 * - Isolation: at most `webhookEndpointConcurrency` deliveries per endpoint are leased at once
 *   (counted across processes), `webhookConcurrency` per process, and sends are never awaited as a
 *   batch, so a slow endpoint only occupies its own slots.
 * - Recording: one loop does the database work. The outcomes of the sends that finished while it
 *   was busy are recorded, and the free slots claimed again, in one round (delivery-queue.ts
 *   `recordOutcomes`: one transaction; on PostgreSQL one call, one round trip): under load the
 *   batches grow by themselves, and an idle worker records and claims at once. A send's
 *   slot and lease are held until its outcome is committed, so on PostgreSQL a started worker
 *   runs its rounds on a connection of its own rather than waiting for the pool behind requests.
 *   New deliveries wake an idle worker at once; a busy one claims them with its next round (at
 *   most NUDGE_DELAY_MS later).
 * - Time: scheduling reads `deps.clock`; tests call `runOnce()`/`drain()` instead of `start()`.
 */
export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhooks';
  readonly id: string;
  private readonly sender: HttpSender;
  private readonly bodies = new EventBodies();
  private readonly wallClock: Clock;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly finished: Finished[] = [];
  /** Claimed jobs of the loop not yet recorded: what counts against `webhookConcurrency`. */
  private slots = 0;
  private started = false;
  private stopped = false;
  /** Set by abandon(): jobs a claim in progress still returns are given back without a send. */
  private abandoning = false;
  private pumping = false;
  private pumpRun: Promise<void> = Promise.resolve();
  private pumpAgain = false;
  private kickQueued = false;
  private gatherTimer: NodeJS.Timeout | undefined;
  /** Outbox nudges received, and how many of them a claim issued since covers. */
  private nudges = 0;
  private nudgesClaimed = 0;
  private nudgeTimer: NodeJS.Timeout | undefined;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private lastFailure: number | undefined;
  /** PostgreSQL: the lock proving this worker alive, and the look for dead workers' leases. */
  private liveness: LivenessLock | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  /**
   * PostgreSQL, once started: the loop's own connection for its claims and records (one round trip
   * each, never waiting for the pool behind requests). Until then, and on SQLite, `deps.db`.
   */
  private loopDb: Db | undefined;

  constructor(
    private readonly deps: Deps,
    private opts: DeliveryWorkerOptions = {},
  ) {
    if (!opts.pgListenUrl && isPostgresUrl(deps.config.databaseUrl)) this.opts = { ...opts, pgListenUrl: deps.config.databaseUrl };
    this.id = opts.id ?? newWorkerId();
    this.wallClock = opts.wallClock ?? systemClock;
    const { config } = deps;
    this.sender = new HttpSender({
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
    });
  }

  /** Lease length: longer than any send can take, so a live worker never loses its lease. */
  private get leaseMs(): number {
    return this.deps.config.webhookTimeoutMs + 30_000;
  }

  /**
   * Runs in the background: wakes on new deliveries, on the next due time, and every poll interval.
   * Leases of workers that died are given back first (SQLite: all of earlier runs; PostgreSQL:
   * those whose liveness lock is gone, looked for again every LIVENESS_CHECK_MS).
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    const key = livenessKeyOf(this.id);
    if (this.deps.db.dialect === 'postgres' && key !== undefined && this.opts.pgListenUrl) {
      this.liveness = new LivenessLock(this.opts.pgListenUrl, key, this.deps.log, () => this.wake());
    }
    void this.startLiveness().then(
      () => this.wake(),
      (err) => {
        this.deps.log.error({ err }, 'webhook worker could not release the leases of dead workers');
        this.wake();
      },
    );
    this.unsubscribe = onOutbox(() => this.nudged(), {
      pgUrl: this.opts.pgListenUrl,
      log: this.deps.log,
      deliveriesOnly: true,
      // SQLite's single connection runs the claim after the event's commit: one wake is enough.
      followUp: this.deps.db.dialect === 'postgres',
    });
  }

  /** The database of claims and records: the loop's own connection when there is one. */
  private get queue(): Db {
    return this.loopDb ?? this.deps.db;
  }

  private async startLiveness(): Promise<void> {
    const { db, log, config } = this.deps;
    if (db.dialect !== 'postgres') {
      const freed = await releaseEarlierRunsLeases(db, this.id);
      if (freed) log.info({ freed }, 'webhook deliveries leased by an earlier run given back');
      return;
    }
    // Not behind a pooler in transaction mode (named statements off): session settings would not
    // stay with the connection there.
    if (config.pgNamedStatements !== false && this.opts.pgListenUrl) {
      const loopDb = await openLoopConnection(this.opts.pgListenUrl);
      if (this.stopped) await loopDb.close();
      else this.loopDb = loopDb;
    }
    if (!this.liveness) return;
    await this.liveness.acquire();
    const look = async () => {
      const freed = await releaseDeadWorkersLeases(db);
      if (freed) {
        log.info({ freed }, 'webhook deliveries leased by dead workers given back');
        this.wake();
      }
    };
    await look();
    const again = () => {
      this.livenessTimer = setTimeout(() => {
        if (this.stopped) return;
        look()
          .catch((err) => log.warn({ err }, 'looking for dead webhook workers failed'))
          .finally(again);
      }, LIVENESS_CHECK_MS);
      this.livenessTimer.unref();
    };
    again();
  }

  healthy(): boolean {
    // Unhealthy when stopped, or when the database kept failing for the last minute.
    if (this.stopped) return false;
    return this.lastFailure === undefined || Date.now() - this.lastFailure > 60_000;
  }

  /**
   * Shutdown: claims nothing more and cuts off the sends still out; their deliveries are given back
   * unattempted and sent again by the next worker (at-least-once; the `webhook-id` stays the same).
   * Outcomes of sends that already finished are still recorded by `stop()`.
   */
  abandon(): void {
    this.abandoning = true;
    this.stopped = true;
    clearTimeout(this.livenessTimer);
    clearTimeout(this.timer);
    clearTimeout(this.nudgeTimer);
    this.sender.abandonAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.livenessTimer);
    clearTimeout(this.timer);
    clearTimeout(this.nudgeTimer);
    await this.unsubscribe?.();
    // Sends still out are recorded (the loop keeps recording after the stop; it claims no more).
    while (this.pumping || this.inFlight.size) await Promise.allSettled([this.pumpRun, ...this.inFlight]);
    // Alive until its leases are recorded or given back: then others may take what is left.
    await this.liveness?.release();
    const loopDb = this.loopDb;
    this.loopDb = undefined;
    await loopDb?.close().catch(() => {});
    this.sender.close();
  }

  /** Claims what is due now (up to free capacity), sends it, and resolves when those sends are recorded. */
  async runOnce(): Promise<number> {
    const jobs = await this.claim(this.freeSlots());
    await Promise.all(jobs.map((job) => this.track(job)));
    return jobs.length;
  }

  /** runOnce until nothing is due: what tests await instead of sleeping. */
  async drain(maxRounds = 1000): Promise<number> {
    let total = 0;
    for (let i = 0; i < maxRounds; i++) {
      const n = await this.runOnce();
      if (n === 0) break;
      total += n;
    }
    return total;
  }

  /** Claims up to `limit` due deliveries for this worker; the rows are leased until `lease_until`. */
  claim(limit: number): Promise<Job[]> {
    return claimDeliveries(this.queue, this.claimRequest(limit));
  }

  private claimRequest(limit: number): ClaimRequest {
    const now = this.deps.clock.now();
    return { now, leaseUntil: now + this.leaseMs, workerId: this.id, perEndpoint: this.deps.config.webhookEndpointConcurrency, limit };
  }

  /** Sends one claimed delivery and records the outcome (resolves once it is committed). */
  deliver(job: Job): Promise<SendResult> {
    return this.sendAndRecord(job, false);
  }

  private async sendAndRecord(job: Job, slot: boolean): Promise<SendResult> {
    // The account's `typeNames` setting (docs/api/integrations.md) applies to webhook bodies too.
    const body = this.bodies.of(job.event_id, job.api_version, job.type_names, job.payload);
    const timestamp = Math.floor(this.wallClock.now() / 1000);
    const result: SendResult = this.abandoning
      ? { statusCode: null, error: 'abandoned at shutdown', durationMs: 0, abandoned: true }
      : await this.sender.send(job.url, signatureHeaders(job.secret, job.message_id, timestamp, body), body);
    if (result.abandoned) {
      await releaseClaims(this.deps.db, this.id, [{ id: job.id, leaseUntil: job.lease_until }]).catch((err) =>
        this.deps.log.warn({ err, deliveryId: job.id }, 'abandoned delivery not released; it is sent again when its lease ends'),
      );
      if (slot) this.slots--;
      return result;
    }
    await new Promise<void>((resolve, reject) => {
      this.finished.push({ job, result, slot, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.kick();
    });
    return result;
  }

  private outcome(job: Job, result: SendResult, now: number): DeliveryOutcome {
    const state = outcomeState(job, result);
    return {
      id: job.id,
      webhookId: job.webhook_id,
      leaseUntil: job.lease_until,
      attempts: job.attempts + 1,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.error === null ? null : result.error.slice(0, 2000),
      state,
      nextAttemptAt: state === 'retry' ? now + Math.round(RETRY_DELAYS_MS[job.attempts] * this.deps.config.webhookRetryScale) : null,
    };
  }

  /**
   * Records the finished sends queued so far at once and, when `claiming`, then claims into the
   * slots that frees (and the others free); returns the claimed jobs (`recordOutcomes`).
   * If the record fails, each outcome is recorded alone (no claim), so one bad outcome cannot
   * take the others with it; one that still fails is reported to its caller, and its lease expires
   * (the delivery is sent again: at-least-once).
   */
  private async recordFinished(claiming: boolean): Promise<Job[]> {
    const batch = this.finished.splice(0, RECORD_BATCH);
    const policy = () => {
      const now = this.deps.clock.now();
      return { now, workerId: this.id, disableIfFailingSince: now - DISABLE_AFTER_MS };
    };
    const record = (items: Finished[], claim?: ClaimRequest) => {
      const p = policy();
      return recordOutcomes(
        this.queue,
        items.map((f) => this.outcome(f.job, f.result, p.now)),
        p,
        claim,
      );
    };
    const settle = (f: Finished, error?: unknown) => {
      if (f.slot) this.slots--;
      if (error === undefined) metrics.webhookDeliveries.inc({ outcome: outcomeState(f.job, f.result) });
      f.settle(error);
    };
    const freed = batch.filter((f) => f.slot).length;
    const asked = claiming ? this.freeSlots() + freed : 0;
    if (asked > 0) this.nudgesClaimed = this.nudges;
    try {
      const jobs = await record(batch, asked > 0 ? this.claimRequest(asked) : undefined);
      for (const f of batch) settle(f);
      return jobs;
    } catch (err) {
      if (batch.length === 1) {
        settle(batch[0], err);
        throw err;
      }
      for (const f of batch) {
        try {
          await record([f]);
          settle(f);
        } catch (error) {
          settle(f, error);
        }
      }
      throw err;
    }
  }

  private freeSlots(): number {
    return this.deps.config.webhookConcurrency - this.slots;
  }

  private track(job: Job): Promise<void> {
    this.slots++;
    const p: Promise<void> = this.sendAndRecord(job, true)
      .then(() => undefined)
      .catch((err) => {
        this.lastFailure = Date.now();
        this.deps.log.error({ err, deliveryId: job.id }, 'webhook delivery could not be recorded');
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
    return p;
  }

  /**
   * A send finished: the loop records it. Sends finishing in the same turn of the event loop are
   * gathered (setImmediate), and while the loop is busy every finished send waits for its next
   * round: one transaction for all of them. While fewer than a quarter of the sends out have
   * finished, the round waits up to GATHER_MS for more: under ingest a round recorded ~13 sends,
   * and its commit and claim, paid per round, cost more than the sends (docs/performance.md).
   */
  private kick(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    const few = this.finished.length * 4 < this.slots;
    if (this.kickQueued) {
      // Enough gathered: the round need not wait for the rest of GATHER_MS.
      if (!few && this.gatherTimer) {
        clearTimeout(this.gatherTimer);
        this.gatherTimer = undefined;
        this.kickQueued = false;
      } else return;
    }
    this.kickQueued = true;
    const go = () => {
      this.gatherTimer = undefined;
      if (!this.kickQueued) return;
      this.kickQueued = false;
      this.wake();
    };
    if (few && this.started && !this.stopped) this.gatherTimer = setTimeout(go, GATHER_MS);
    else setImmediate(go);
  }

  /** New deliveries may exist: an idle worker claims at once, a busy one within NUDGE_DELAY_MS. */
  private nudged(): void {
    this.nudges++;
    if (!this.slots) {
      this.wake();
      return;
    }
    this.nudgeTimer ??= setTimeout(() => {
      this.nudgeTimer = undefined;
      // A claim issued after the nudge (with a finished send) has seen its deliveries already.
      if (this.nudgesClaimed < this.nudges) this.wake();
    }, NUDGE_DELAY_MS);
    this.nudgeTimer.unref();
  }

  private wake(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    if (this.stopped && !this.finished.length) return;
    this.pumpRun = this.pump();
  }

  /**
   * Whether the loop claims: only a started worker, until it stops (then it only records), and on
   * PostgreSQL only while it holds its liveness lock (without it, others may free its leases).
   */
  private get claiming(): boolean {
    return this.started && !this.stopped && (this.liveness === undefined || this.liveness.held);
  }

  /**
   * The loop: records what finished, claims into the free slots (without waiting for the sends),
   * and goes round again while there is news; then sleeps until due.
   */
  private async pump(): Promise<void> {
    this.pumping = true;
    let failed = false;
    try {
      do {
        this.pumpAgain = false;
        let jobs: Job[];
        if (this.finished.length) {
          jobs = await this.recordFinished(this.claiming);
          if (this.finished.length) this.pumpAgain = true;
        } else {
          const asked = this.claiming ? this.freeSlots() : 0;
          if (asked <= 0) continue;
          this.nudgesClaimed = this.nudges;
          jobs = await this.claim(asked);
        }
        for (const job of jobs) void this.track(job);
        // No claim again now: the free slots are full, or nothing else is claimable until a send
        // finishes or an event arrives, and both wake the loop.
      } while (this.pumpAgain);
      if (this.claiming) {
        // While sends are out, each one finishing wakes the loop: the next due time is looked up
        // when the last is done (the poll stays armed as the safety net).
        if (this.slots) this.arm(this.deps.config.eventsPollMs);
        else await this.scheduleNext();
      }
      this.lastFailure = undefined;
    } catch (err) {
      failed = true;
      this.lastFailure = Date.now();
      this.deps.log.error({ err }, 'webhook worker loop failed; retrying');
      this.arm(this.deps.config.eventsPollMs);
    } finally {
      this.pumping = false;
    }
    // News that came while the loop was finishing (after its last check) gets a round of its own;
    // after a failure only finished sends do (claims wait for the poll).
    if (this.finished.length || (this.pumpAgain && !failed)) this.wake();
  }

  private async scheduleNext(): Promise<void> {
    const poll = this.deps.config.eventsPollMs;
    const due = await nextDueAt(this.queue);
    // Rows due already were just passed over (held behind an earlier delivery of their lead, or
    // by an endpoint at capacity): a completion wakes us for those, the poll is the safety net.
    const now = this.deps.clock.now();
    const wait = due === undefined || due <= now ? poll : Math.min(poll, due - now);
    this.arm(wait);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (!this.claiming) return;
    this.timer = setTimeout(() => this.wake(), Math.max(ms, 5));
    this.timer.unref();
  }
}
