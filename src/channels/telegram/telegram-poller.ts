import type { IntegrationRow } from '../../db/schema.js';
import type { Logger } from '../../domain/context.js';
import { AppError } from '../../domain/errors.js';
import type { BackgroundWorker } from '../../domain/workers.js';
import type { Leases } from '../../domain/leases/leases.js';
import type { BotChannels } from '../bots/bot-channels.js';
import { ChannelFailedError, ChannelRejectedError, ChannelTimeoutError } from '../channel.js';
import { ALLOWED_UPDATES } from './telegram-adapter.js';

/** How often the poller looks for Telegram integrations connected or removed meanwhile. */
const REFRESH_MS = 5_000;
/** Pause after a failed poll of one bot before the next attempt. */
const BACKOFF_MS = 5_000;
/** Seconds a bot's poll lease lasts beyond one `getUpdates` call. */
const LEASE_MARGIN_S = 20;
/** How often a process without a bot's lease asks for it again. */
const LEASE_RETRY_MS = 5_000;

/**
 * Telegram long polling, for installations without a public address (no PARLEY_PUBLIC_URL): one
 * `getUpdates` loop per active `msgrb_bot` integration. Each update is committed (ingest) before
 * its offset is saved in `bot_poll_offsets`, and the saved offset confirms it to Telegram on the
 * next call: a restart re-reads at most the update that was being stored, which ingest recognizes
 * as a redelivery. Telegram answers 409 to a second concurrent poller, so with several processes a
 * bot is polled only by the process holding its lease (`telegram-poll:<integrationId>`); the
 * others wait and take over when that lease expires.
 */
export class TelegramPoller implements BackgroundWorker {
  readonly name = 'telegram-poller';
  private running = false;
  private stopped = false;
  private readonly abort = new AbortController();
  private readonly loops = new Map<number, Promise<void>>();
  private supervisor: Promise<void> | undefined;
  private lastFailure: number | undefined;

  constructor(
    private readonly bots: BotChannels,
    private readonly log: Logger,
    /** Seconds each `getUpdates` waits for updates. */
    private readonly timeoutSeconds: number,
    /** One poller per bot across processes; absent: this process polls every bot. */
    private readonly leases?: Leases,
  ) {}

  /** A lease outlives one whole `getUpdates` (renewed before each), with a margin. */
  private get leaseMs(): number {
    return (this.timeoutSeconds + 10 + LEASE_MARGIN_S) * 1000;
  }

  /** Runs until stop(): one loop per integration, started as integrations appear. */
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

  /** One short poll (timeout 0) of every active bot; the number of updates handled. */
  async runOnce(): Promise<number> {
    let handled = 0;
    for (const row of await this.bots.pollableIntegrations()) {
      try {
        handled += (await this.poll(row, 0)).handled;
      } catch (err) {
        this.log.warn({ err, integrationId: row.id }, 'Telegram poll failed');
      }
    }
    return handled;
  }

  /**
   * One `getUpdates` from the saved offset; each update stored, then its offset saved. A malformed
   * update is skipped (logged); any other failure stops the batch (`failed`), to be read again
   * from the saved offset next time. A failing getUpdates throws.
   */
  async poll(row: IntegrationRow, timeoutSeconds: number): Promise<{ handled: number; failed: boolean }> {
    const integration = this.bots.parts.integrations.channelIntegration(row);
    const api = this.bots.telegram.api(integration);
    const offset = await this.bots.pollOffset(row.id);
    const params = { offset, timeout: timeoutSeconds, allowed_updates: ALLOWED_UPDATES };
    const timeoutMs = (timeoutSeconds + 10) * 1000;
    const updates = await this.bots.telegram.guard(row, Date.now(), () =>
      api.call<unknown[]>('getUpdates', params, { timeoutMs, signal: this.abort.signal }),
    );
    if (!Array.isArray(updates)) throw new ChannelFailedError('getUpdates answered no array');
    const ordered = updates
      .filter(
        (u): u is { update_id: number } =>
          typeof u === 'object' && u !== null && Number.isSafeInteger((u as { update_id?: unknown }).update_id),
      )
      .sort((a, b) => a.update_id - b.update_id);
    let handled = 0;
    for (const update of ordered) {
      if (update.update_id < offset) continue;
      try {
        try {
          await this.bots.telegramUpdate(row, update);
        } catch (err) {
          if (!(err instanceof AppError && err.statusCode === 400)) throw err;
          this.log.warn({ integrationId: row.id, updateId: update.update_id }, 'malformed Telegram update skipped');
        }
        await this.bots.savePollOffset(row.id, update.update_id + 1);
      } catch (err) {
        if (!isProviderSide(err)) this.lastFailure = Date.now();
        this.log.warn({ err, integrationId: row.id, updateId: update.update_id }, 'Telegram update not stored; it will be read again');
        return { handled, failed: true };
      }
      handled++;
    }
    return { handled, failed: false };
  }

  private async supervise(): Promise<void> {
    while (this.running) {
      try {
        for (const row of await this.bots.pollableIntegrations()) {
          if (!this.loops.has(row.id)) this.loops.set(row.id, this.loop(row.id));
        }
      } catch (err) {
        this.lastFailure = Date.now();
        this.log.error({ err }, 'Telegram poller cannot list integrations');
      }
      await this.pause(REFRESH_MS);
    }
  }

  private async loop(id: number): Promise<void> {
    try {
      while (this.running) {
        const [row] = await this.bots.pollableIntegrations(id);
        if (!row) return;
        if (this.leases && !(await this.leases.hold(`telegram-poll:${id}`, this.leaseMs))) {
          // Another process polls this bot; look again in a while (it may have stopped).
          await this.pause(LEASE_RETRY_MS);
          continue;
        }
        try {
          const { failed } = await this.poll(row, this.timeoutSeconds);
          if (failed) await this.pause(BACKOFF_MS);
        } catch (err) {
          if (!this.running) return;
          if (!isProviderSide(err)) this.lastFailure = Date.now();
          this.log.warn({ err, integrationId: id }, 'Telegram poll failed; retrying');
          await this.pause(BACKOFF_MS);
        }
      }
    } catch (err) {
      this.lastFailure = Date.now();
      this.log.error({ err, integrationId: id }, 'Telegram poll loop ended');
    } finally {
      this.loops.delete(id);
      if (this.running) await this.leases?.release(`telegram-poll:${id}`).catch(() => {});
    }
  }

  private pause(ms: number): Promise<void> {
    return pause(ms, this.abort.signal);
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

/** Failures of Telegram (or a refusal to store its data), not of this process or its database. */
function isProviderSide(err: unknown): boolean {
  return (
    err instanceof ChannelRejectedError ||
    err instanceof ChannelFailedError ||
    err instanceof ChannelTimeoutError ||
    err instanceof AppError
  );
}
