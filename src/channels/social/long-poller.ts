import type { IntegrationRow } from '../../db/schema.js';
import type { Logger } from '../../domain/context.js';
import { AppError } from '../../domain/errors.js';
import type { BackgroundWorker } from '../../domain/workers.js';
import type { Leases } from '../../domain/leases/leases.js';
import { ChannelFailedError, ChannelRejectedError, ChannelTimeoutError } from '../../domain/channels/channel.js';
import type { ProviderJson } from '../provider-json.js';

/** How often the poller looks for integrations connected or removed meanwhile. */
const REFRESH_MS = 5_000;
/** Pause after a failed poll of one integration before the next attempt. */
const BACKOFF_MS = 5_000;
/** A lease outlives one whole poll (renewed before each) by this margin, in seconds. */
const LEASE_MARGIN_S = 30;
/** How often a process without an integration's lease asks for it again. */
const LEASE_RETRY_MS = 5_000;

/** A poll's outcome; `internal`: the batch stopped for a reason of this process (its database), which `/ready` reports. */
export interface PollResult {
  handled: number;
  failed: boolean;
  internal?: boolean;
}

/** One provider's long polling, as the poller drives it. */
export interface PollSource {
  /** The worker's name (`/ready`, logs). */
  name: string;
  /** The prefix of its integrations' lease names; default `<name>-poll`. */
  leasePrefix?: string;
  /** Active integrations polled (all, or the one with `id` when it is still active). */
  integrations(id?: number): Promise<IntegrationRow[]>;
  /**
   * One poll of one integration waiting at most `waitSeconds`: events committed and the cursor
   * saved after them. Answers how many events were handled, and `failed` when a batch stopped early
   * (to be read again from the saved cursor).
   */
  poll(row: IntegrationRow, waitSeconds: number, signal: AbortSignal): Promise<PollResult>;
}

/**
 * Long polling for installations without a public address (Telegram bots, VK, OK): one
 * loop per active integration of the source, started as integrations appear, ended when they go.
 * The cursor lives in the database, so a restart resumes after the last committed batch. With
 * several processes, each integration is polled only by the process holding its lease
 * (`<source>-poll:<integrationId>`): the provider hands an update to one consumer (Telegram answers
 * 409 to a second poller), and two pollers would race on the cursor.
 */
export class LongPoller implements BackgroundWorker {
  readonly name: string;
  private running = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly loops = new Map<number, Promise<void>>();
  private supervisor: Promise<void> | undefined;
  private lastFailure: number | undefined;

  constructor(
    private readonly source: PollSource,
    private readonly log: Logger,
    private readonly waitSeconds: number,
    /** One poller per integration across processes; absent: this process polls every integration. */
    private readonly leases?: Leases,
  ) {
    this.name = source.name;
  }

  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    this.supervisor = this.supervise();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.running = false;
    this.abort.abort();
    await this.supervisor;
    await Promise.all([...this.loops.values()]);
    await this.leases?.releaseAll();
  }

  healthy(): boolean {
    if (this.stopped) return false;
    return this.lastFailure === undefined || Date.now() - this.lastFailure > 60_000;
  }

  /** One short poll (no waiting) of every active integration; the number of events handled. */
  async runOnce(): Promise<number> {
    let handled = 0;
    for (const row of await this.source.integrations()) {
      try {
        handled += (await this.source.poll(row, 0, this.abort.signal)).handled;
      } catch (err) {
        this.log.warn({ err, integrationId: row.id }, `${this.name}: poll failed`);
      }
    }
    return handled;
  }

  private async supervise(): Promise<void> {
    while (this.running) {
      try {
        for (const row of await this.source.integrations()) {
          if (!this.loops.has(row.id)) this.loops.set(row.id, this.loop(row.id));
        }
      } catch (err) {
        this.lastFailure = Date.now();
        this.log.error({ err }, `${this.name}: cannot list integrations`);
      }
      await pause(REFRESH_MS, this.abort.signal);
    }
  }

  private async loop(id: number): Promise<void> {
    try {
      while (this.running) {
        const [row] = await this.source.integrations(id);
        if (!row) return;
        if (this.leases && !(await this.leases.hold(this.leaseName(id), (this.waitSeconds + LEASE_MARGIN_S) * 1000))) {
          // Another process polls this integration; look again in a while (it may have stopped).
          await pause(LEASE_RETRY_MS, this.abort.signal);
          continue;
        }
        // Stopped while asking: no new poll. The lease (maybe just granted, after another process let
        // it go on its own stop) is given back by stop().
        if (!this.running) return;
        try {
          const { failed, internal } = await this.source.poll(row, this.waitSeconds, this.abort.signal);
          if (internal) this.lastFailure = Date.now();
          if (failed) await pause(BACKOFF_MS, this.abort.signal);
        } catch (err) {
          if (!this.running) return;
          if (!isProviderSide(err)) this.lastFailure = Date.now();
          this.log.warn({ err, integrationId: id }, `${this.name}: poll failed; retrying`);
          await pause(BACKOFF_MS, this.abort.signal);
        }
      }
    } catch (err) {
      this.lastFailure = Date.now();
      this.log.error({ err, integrationId: id }, `${this.name}: poll loop ended`);
    } finally {
      this.loops.delete(id);
      if (this.running) await this.leases?.release(this.leaseName(id)).catch(() => {});
    }
  }

  private leaseName(id: number): string {
    return `${this.source.leasePrefix ?? `${this.name}-poll`}:${id}`;
  }
}

/**
 * Waits `ms`, or less when `signal` aborts. The abort listener goes when the wait ends: a
 * supervisor pausing every few seconds on one long-lived signal kept one per pause before
 * (MaxListenersExceededWarning a minute after start, and a slow leak).
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Handles one batch of a poll in order: a malformed event (400) is skipped with a warning; any other
 * failure stops the batch (`failed`), to be read again from the saved cursor.
 */
export async function handleBatch(
  items: unknown[],
  handle: (item: ProviderJson) => Promise<unknown>,
  log: Logger,
  context: Record<string, unknown>,
): Promise<PollResult> {
  let handled = 0;
  for (const item of items) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) continue;
    try {
      await handle(item as ProviderJson);
    } catch (err) {
      if (err instanceof AppError && err.statusCode === 400) {
        log.warn(context, 'malformed event skipped');
        continue;
      }
      log.warn({ ...context, err }, 'event not stored; the batch will be read again');
      return { handled, failed: true, internal: !isProviderSide(err) };
    }
    handled++;
  }
  return { handled, failed: false };
}

/** Failures of the provider (or a refusal to store its data), not of this process or its database. */
export function isProviderSide(err: unknown): boolean {
  return (
    err instanceof ChannelRejectedError ||
    err instanceof ChannelFailedError ||
    err instanceof ChannelTimeoutError ||
    err instanceof AppError
  );
}
