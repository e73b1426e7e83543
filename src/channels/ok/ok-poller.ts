import type { IntegrationRow } from '../../db/schema.js';
import type { Logger } from '../../domain/context.js';
import { ChannelFailedError } from '../../domain/channels/channel.js';
import { handleBatch, type PollResult, type PollSource } from '../social/long-poller.js';
import type { SocialChannels } from '../social/social-channels.js';
import { guardCall, isObject } from '../social/social-kit.js';

/** Notifications asked per poll. */
const BATCH = 100;

/**
 * OK long polling for groups when Parley has no public address: the long-polling subscription made
 * at connect is read with `GET /graph/me/updates?marker=<m>&count&timeout`, answering
 * `{marker, updates}`. The marker is durable: saved after each batch is committed (a batch cut
 * short is read again; its messages are recognized by `mid`).
 */
export class OkPollSource implements PollSource {
  readonly name = 'ok-poller';

  constructor(
    private readonly social: SocialChannels,
    private readonly log: Logger,
  ) {}

  integrations(id?: number): Promise<IntegrationRow[]> {
    return this.social.pollableIntegrations('social3', id);
  }

  async poll(row: IntegrationRow, waitSeconds: number, signal: AbortSignal): Promise<PollResult> {
    const api = this.social.ok.api(this.social.channelIntegration(row));
    const marker = await this.social.pollCursor(row.id);
    const query = { count: String(BATCH), timeout: String(waitSeconds), ...(marker ? { marker } : {}) };
    const answer = await guardCall(this.social.kit, row, Date.now(), () =>
      api.get<{ marker?: unknown; updates?: unknown }>('updates', query, { timeoutMs: (waitSeconds + 10) * 1000, signal }),
    );
    if (!isObject(answer) || !Array.isArray(answer.updates)) throw new ChannelFailedError('OK updates answered no list');
    const batch = await handleBatch(answer.updates, (update) => this.social.okEvent(row, update), this.log, {
      integrationId: row.id,
      provider: 'OK',
    });
    if (batch.failed) return batch;
    if (answer.marker !== undefined && answer.marker !== null) await this.social.savePollCursor(row.id, String(answer.marker));
    return batch;
  }
}
