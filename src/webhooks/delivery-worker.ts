import crypto from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import { isPostgresUrl } from '../config.js';
import { VERSION_TRAITS, API_VERSIONS, type ApiVersion } from '../api/versions.js';
import { systemClock, type Clock } from '../domain/clock.js';
import type { Deps } from '../domain/context.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { HttpSender, type SendResult } from './http-sender.js';
import { signatureHeaders } from './signing.js';
import { onOutbox } from './wakeup.js';

/** decisions.md §7: delays before each retry (ms), multiplied by PARLEY_WEBHOOK_RETRY_SCALE. */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
/**
 * A claim looks at the oldest this-many deliveries it could send now (endpoint below capacity,
 * nothing earlier of the lead pending), so its cost does not grow with a backlog (thousands of
 * pending rows cost ~20 ms a claim before; leased rows are counted through deliveries_lease_idx).
 * Rows beyond them wait for the next claim: endpoints at capacity are excluded before the cut, so
 * one cannot crowd out the others.
 */
const CANDIDATES = 128;
/** How long a busy worker gathers completed sends and new deliveries before its next claim. */
const COMPLETION_BATCH_MS = 10;
/** An endpoint failing for this long without one success is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600_000;

export interface DeliveryWorkerOptions {
  /** Identifies this worker's leases (`leased_by`). */
  id?: string;
  /** Real time for the `webhook-timestamp` header (receivers compare it with their own clock). */
  wallClock?: Clock;
  /** A PostgreSQL URL to LISTEN on for wake-ups from other processes. */
  pgListenUrl?: string;
}

interface Claimed {
  id: number;
  webhook_id: number;
  event_id: number;
  message_id: string;
  attempts: number;
  lease_until: number;
}

interface Job extends Claimed {
  url: string;
  secret: string;
  api_version: string;
  payload: string;
}

/**
 * The webhook delivery worker: claims due deliveries with a lease, signs and POSTs them, records
 * every attempt, reschedules failures and disables endpoints failing for 5 days.
 *
 * - Claiming is one statement (`UPDATE ... RETURNING`); on PostgreSQL candidate rows are locked
 *   `FOR UPDATE SKIP LOCKED`, so several processes never claim one delivery at once. A lease
 *   (`lease_until`) outlives the send timeout; if the process dies, the lease expires and any
 *   worker claims the delivery again (at-least-once).
 * - Order: a delivery is not claimed while an earlier delivery of the same webhook and lead is
 *   still pending (in flight or waiting for a retry).
 * - Isolation: at most `webhookEndpointConcurrency` deliveries per endpoint are leased at once
 *   (counted across processes), `webhookConcurrency` per process, and sends are never awaited as a
 *   batch, so a slow endpoint only occupies its own slots.
 * - Time: scheduling reads `deps.clock`; tests call `runOnce()`/`drain()` instead of `start()`.
 */
export class DeliveryWorker implements BackgroundWorker {
  readonly name = 'webhooks';
  readonly id: string;
  private readonly sender: HttpSender;
  private readonly wallClock: Clock;
  private readonly inFlight = new Set<Promise<void>>();
  private started = false;
  private stopped = false;
  private pumping = false;
  private pumpAgain = false;
  private wakeQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => Promise<void>) | undefined;
  private lastFailure: number | undefined;

  constructor(
    private readonly deps: Deps,
    private opts: DeliveryWorkerOptions = {},
  ) {
    if (!opts.pgListenUrl && isPostgresUrl(deps.config.databaseUrl)) this.opts = { ...opts, pgListenUrl: deps.config.databaseUrl };
    this.id = opts.id ?? `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
    this.wallClock = opts.wallClock ?? systemClock;
    const { config } = deps;
    this.sender = new HttpSender({
      timeoutMs: config.webhookTimeoutMs,
      allowPrivate: config.webhookAllowPrivate,
      maxSocketsPerHost: config.webhookEndpointConcurrency,
    });
  }

  /** Lease length: longer than any send can take, so a live worker never loses its lease. */
  private get leaseMs(): number {
    return this.deps.config.webhookTimeoutMs + 30_000;
  }

  /** Runs in the background: wakes on new deliveries, on the next due time, and every poll interval. */
  start(): void {
    if (this.started) return;
    this.started = true;
    // New deliveries: claimed at once by an idle worker; a busy one gathers them with the completions.
    const nudge = () => (this.inFlight.size ? this.wakeSoon() : this.wake());
    this.unsubscribe = onOutbox(nudge, { pgUrl: this.opts.pgListenUrl, log: this.deps.log, deliveriesOnly: true });
    this.wake();
  }

  healthy(): boolean {
    // Unhealthy when stopped, or when the database kept failing for the last minute.
    if (this.stopped) return false;
    return this.lastFailure === undefined || Date.now() - this.lastFailure > 60_000;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.unsubscribe?.();
    await Promise.allSettled([...this.inFlight]);
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
  async claim(limit: number): Promise<Job[]> {
    if (limit <= 0) return [];
    const db = this.deps.db.kysely;
    const now = this.deps.clock.now();
    const lease = now + this.leaseMs;
    const perEndpoint = this.deps.config.webhookEndpointConcurrency;
    const postgres = this.deps.db.dialect === 'postgres';
    const claimable = sql`d.status = 'pending' and (d.lease_until is null or d.lease_until < ${now})`;
    const query = sql<Claimed>`
      with busy as (
        select webhook_id, count(*) as n from deliveries
        where status = 'pending' and lease_until is not null and lease_until >= ${now}
        group by webhook_id
      ),
      candidates as (
        select d.id, d.webhook_id, d.next_attempt_at
        from deliveries d
        join webhooks w on w.id = d.webhook_id
        left join busy b on b.webhook_id = d.webhook_id
        where ${claimable} and w.status = 1 and d.next_attempt_at <= ${now}
          and coalesce(b.n, 0) < ${perEndpoint}
          and (d.lead_id is null or not exists (
            select 1 from deliveries e
            where e.webhook_id = d.webhook_id and e.lead_id = d.lead_id and e.status = 'pending' and e.id < d.id))
        order by d.next_attempt_at, d.id
        limit ${CANDIDATES}
      ),
      ready as (
        select c.id, c.webhook_id, c.next_attempt_at,
          row_number() over (partition by c.webhook_id order by c.next_attempt_at, c.id) as rn
        from candidates c
      ),
      picked as (
        select r.id from ready r left join busy b on b.webhook_id = r.webhook_id
        where r.rn + coalesce(b.n, 0) <= ${perEndpoint}
        order by r.next_attempt_at, r.id
        limit ${limit}
      )${
        postgres
          ? sql`, locked as (
        select d.id from deliveries d where d.id in (select id from picked) and ${claimable}
        for update skip locked
      )`
          : sql``
      }
      update deliveries set lease_until = ${lease}, leased_by = ${this.id}
      where id in (select id from ${postgres ? sql`locked` : sql`picked`})
      returning id, webhook_id, event_id, message_id, attempts, lease_until`;
    const claimed = (await query.execute(db)).rows;
    if (!claimed.length) return [];
    const details = await db
      .selectFrom('deliveries')
      .innerJoin('webhooks', 'webhooks.id', 'deliveries.webhook_id')
      .innerJoin('events', 'events.id', 'deliveries.event_id')
      .select(['deliveries.id', 'webhooks.url', 'webhooks.secret', 'webhooks.api_version', 'events.payload'])
      .where('deliveries.id', 'in', claimed.map((c) => c.id))
      .execute();
    const byId = new Map(details.map((d) => [d.id, d]));
    return claimed
      .filter((c) => byId.has(c.id))
      .sort((a, b) => a.id - b.id)
      .map((c) => ({ ...c, ...byId.get(c.id)! }));
  }

  /** Sends one claimed delivery and records the outcome. */
  async deliver(job: Job): Promise<SendResult> {
    const body = bodyFor(job.api_version, job.payload);
    const timestamp = Math.floor(this.wallClock.now() / 1000);
    const result = await this.sender.send(job.url, signatureHeaders(job.secret, job.message_id, timestamp, body), body);
    await this.record(job, result);
    return result;
  }

  private async record(job: Job, result: SendResult): Promise<void> {
    const now = this.deps.clock.now();
    const ok = result.error === null;
    const attempts = job.attempts + 1;
    const delay = RETRY_DELAYS_MS[attempts - 1];
    const error = result.error?.slice(0, 2000) ?? null;
    await this.deps.db.kysely.transaction().execute(async (trx) => {
      // The webhook (and with it this delivery) may have been deleted while the request was out:
      // then there is nothing left to record. The row lock keeps a deletion from racing the insert.
      let still = trx.selectFrom('deliveries').select('id').where('id', '=', job.id);
      if (this.deps.db.dialect === 'postgres') still = still.forUpdate();
      if (!(await still.executeTakeFirst())) return;
      await trx
        .insertInto('delivery_attempts')
        .values({ delivery_id: job.id, at: now, status_code: result.statusCode, duration_ms: result.durationMs, error })
        .execute();
      // Only while our lease holds: if it expired and another worker took over, that worker decides.
      await trx
        .updateTable('deliveries')
        .set({
          attempts,
          last_status_code: result.statusCode,
          last_error: error,
          lease_until: null,
          leased_by: null,
          ...(ok
            ? { status: 'delivered', delivered_at: now }
            : delay === undefined
              ? { status: 'dead' }
              : { next_attempt_at: now + Math.round(delay * this.deps.config.webhookRetryScale) }),
        })
        .where('id', '=', job.id)
        .where('leased_by', '=', this.id)
        .where('lease_until', '=', job.lease_until)
        .execute();
      if (ok) {
        await trx.updateTable('webhooks').set({ failing_since: null }).where('id', '=', job.webhook_id).where('failing_since', 'is not', null).execute();
      } else {
        await trx
          .updateTable('webhooks')
          .set({ failing_since: now })
          .where('id', '=', job.webhook_id)
          .where('failing_since', 'is', null)
          .execute();
        await trx
          .updateTable('webhooks')
          .set({ status: 0 })
          .where('id', '=', job.webhook_id)
          .where('status', '=', 1)
          .where('failing_since', '<=', now - DISABLE_AFTER_MS)
          .execute();
      }
    });
  }

  private freeSlots(): number {
    return this.deps.config.webhookConcurrency - this.inFlight.size;
  }

  private track(job: Job): Promise<void> {
    const p: Promise<void> = this.deliver(job)
      .then(() => undefined)
      .catch((err) => {
        this.lastFailure = Date.now();
        this.deps.log.error({ err, deliveryId: job.id }, 'webhook delivery could not be recorded');
      })
      .finally(() => {
        this.inFlight.delete(p);
        if (this.started && !this.stopped) this.wakeSoon();
      });
    this.inFlight.add(p);
    return p;
  }

  /**
   * While sends are in flight, completions and new deliveries within a few milliseconds wake the
   * loop once: one claim for all of them (a claim per completion and per event cost more than the
   * sends themselves under load; at most COMPLETION_BATCH_MS is added to a delivery's wait).
   */
  private wakeSoon(): void {
    if (this.wakeQueued) return;
    this.wakeQueued = true;
    setTimeout(() => {
      this.wakeQueued = false;
      this.wake();
    }, COMPLETION_BATCH_MS).unref();
  }

  private wake(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    void this.pump();
  }

  /** Background loop: claims into free slots without waiting for sends; then sleeps until due. */
  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        const asked = this.freeSlots();
        const jobs = await this.claim(asked);
        for (const job of jobs) void this.track(job);
        // Fewer than asked: nothing else is claimable until a send completes or an event arrives,
        // and both wake the loop; claiming again now would only find nothing (a claim per send).
        if (jobs.length === asked && this.freeSlots() > 0) this.pumpAgain = true;
      } while (this.pumpAgain && !this.stopped);
      // While sends are in flight, each completion wakes the loop: the next due time is looked up
      // when the last one is done (the poll stays armed as the safety net).
      if (this.inFlight.size) this.arm(this.deps.config.eventsPollMs);
      else await this.scheduleNext();
      this.lastFailure = undefined;
    } catch (err) {
      this.lastFailure = Date.now();
      this.deps.log.error({ err }, 'webhook worker loop failed; retrying');
      this.arm(this.deps.config.eventsPollMs);
    } finally {
      this.pumping = false;
    }
  }

  private async scheduleNext(): Promise<void> {
    const poll = this.deps.config.eventsPollMs;
    const row = await this.deps.db.kysely
      .selectFrom('deliveries')
      .innerJoin('webhooks', 'webhooks.id', 'deliveries.webhook_id')
      .select((eb) =>
        eb.fn
          .min(sql<number>`case when deliveries.lease_until is not null and deliveries.lease_until > deliveries.next_attempt_at then deliveries.lease_until else deliveries.next_attempt_at end`)
          .as('due'),
      )
      .where('deliveries.status', '=', 'pending')
      .where('webhooks.status', '=', 1)
      .executeTakeFirst();
    const due = row?.due == null ? undefined : Number(row.due);
    // Rows due already were just passed over (held behind an earlier delivery of their lead, or
    // by an endpoint at capacity): a completion wakes us for those, the poll is the safety net.
    const now = this.deps.clock.now();
    const wait = due === undefined || due <= now ? poll : Math.min(poll, due - now);
    this.arm(wait);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => this.wake(), Math.max(ms, 5));
    this.timer.unref();
  }
}

/** The payload in the shape of the version the webhook was registered through (decisions.md §10). */
export function bodyFor(apiVersion: string, payloadJson: string): string {
  const version = (API_VERSIONS as readonly string[]).includes(apiVersion) ? (apiVersion as ApiVersion) : 'v1.3';
  if (VERSION_TRAITS[version].eventAccountId) return payloadJson;
  const { accountId: _drop, ...rest } = JSON.parse(payloadJson) as Record<string, unknown>;
  return JSON.stringify(rest);
}
