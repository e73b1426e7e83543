import type { IntegrationRow } from '../../db/schema.js';
import type { Logger } from '../../domain/context.js';
import { AppError } from '../../domain/errors.js';
import type { Leases } from '../../domain/leases/leases.js';
import type { BotChannels } from '../bots/bot-channels.js';
import { ChannelFailedError } from '../../domain/channels/channel.js';
import { isProviderSide, LongPoller, type PollResult, type PollSource } from '../social/long-poller.js';
import { ALLOWED_UPDATES } from './telegram-adapter.js';

/**
 * Telegram long polling, for installations without a public address (no PARLEY_PUBLIC_URL): one
 * `getUpdates` loop per active `msgrb_bot` integration, driven by the shared LongPoller. Each
 * update is committed (ingest) before its offset is saved in `bot_poll_offsets`, and the saved
 * offset confirms it to Telegram on the next call: a restart re-reads at most the update that was
 * being stored, which ingest recognizes as a redelivery. Telegram answers 409 to a second
 * concurrent poller, so with several processes a bot is polled only by the process holding its
 * lease (`telegram-poll:<integrationId>`); the others wait and take over when that lease expires.
 */
export class TelegramPoller extends LongPoller {
  constructor(
    bots: BotChannels,
    log: Logger,
    /** Seconds each `getUpdates` waits for updates. */
    timeoutSeconds: number,
    /** One poller per bot across processes; absent: this process polls every bot. */
    leases?: Leases,
  ) {
    super(new TelegramPollSource(bots, log), log, timeoutSeconds, leases);
  }
}

class TelegramPollSource implements PollSource {
  readonly name = 'telegram-poller';
  readonly leasePrefix = 'telegram-poll';

  constructor(
    private readonly bots: BotChannels,
    private readonly log: Logger,
  ) {}

  integrations(id?: number): Promise<IntegrationRow[]> {
    return this.bots.pollableIntegrations(id);
  }

  /**
   * One `getUpdates` from the saved offset; each update stored, then its offset saved. A malformed
   * update is skipped (logged); any other failure stops the batch (`failed`), to be read again
   * from the saved offset next time. A failing getUpdates throws.
   */
  async poll(row: IntegrationRow, timeoutSeconds: number, signal: AbortSignal): Promise<PollResult> {
    const integration = this.bots.parts.integrations.channelIntegration(row);
    const api = this.bots.telegram.api(integration);
    const offset = await this.bots.pollOffset(row.id);
    const params = { offset, timeout: timeoutSeconds, allowed_updates: ALLOWED_UPDATES };
    const timeoutMs = (timeoutSeconds + 10) * 1000;
    const updates = await this.bots.telegram.guard(row, Date.now(), () => api.call<unknown[]>('getUpdates', params, { timeoutMs, signal }));
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
        this.log.warn({ err, integrationId: row.id, updateId: update.update_id }, 'Telegram update not stored; it will be read again');
        return { handled, failed: true, internal: !isProviderSide(err) };
      }
      handled++;
    }
    return { handled, failed: false };
  }
}
