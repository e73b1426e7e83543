import type { IntegrationRow } from '../../db/schema.js';
import type { Logger } from '../../domain/context.js';
import { ChannelFailedError } from '../../domain/channels/channel.js';
import { handleBatch, type PollResult, type PollSource } from '../social/long-poller.js';
import type { SocialChannels } from '../social/social-channels.js';
import { guardCall, isObject } from '../social/social-kit.js';
import type { VkLongPollServer } from './vk-api.js';
import { groupIdOf } from './vk-adapter.js';

/**
 * VK Bots Long Poll (https://dev.vk.com/en/api/bots-long-poll/getting-started) for communities
 * when Parley has no public address. The session (server, key) is asked with
 * `groups.getLongPollServer` and kept in memory; `ts` is durable: saved after each batch is
 * committed, so a restart resumes there (a batch cut short is read again; its stored messages are
 * recognized as redeliveries). `failed: 1` moves to the `ts` VK gives, `2` asks a new key keeping
 * `ts`, `3` asks a new key and `ts` (VK lost the events between).
 */
export class VkPollSource implements PollSource {
  readonly name = 'vk-poller';
  private readonly sessions = new Map<number, VkLongPollServer>();

  constructor(
    private readonly social: SocialChannels,
    private readonly log: Logger,
  ) {}

  integrations(id?: number): Promise<IntegrationRow[]> {
    return this.social.pollableIntegrations('social2_group', id);
  }

  async poll(row: IntegrationRow, waitSeconds: number, signal: AbortSignal): Promise<PollResult> {
    const integration = this.social.channelIntegration(row);
    const api = this.social.vk.api(integration);
    let session = this.sessions.get(row.id);
    if (!session) {
      session = await guardCall(this.social.kit, row, Date.now(), () =>
        api.call<VkLongPollServer>('groups.getLongPollServer', { group_id: groupIdOf(integration) }),
      );
      if (!isObject(session) || typeof session.server !== 'string' || typeof session.key !== 'string') {
        throw new ChannelFailedError('groups.getLongPollServer answered no server and key');
      }
      session = { server: session.server, key: session.key, ts: String(session.ts) };
      this.sessions.set(row.id, session);
    }
    const saved = await this.social.pollCursor(row.id);
    const ts = saved ?? session.ts;
    const answer = await api.check(session, ts, waitSeconds, signal);
    if (answer.failed !== undefined) {
      this.log.info({ integrationId: row.id, failed: answer.failed }, 'VK long poll asks for a new start');
      if (answer.failed === 1 && answer.ts) await this.social.savePollCursor(row.id, answer.ts);
      if (answer.failed === 2 || answer.failed === 3) this.sessions.delete(row.id);
      if (answer.failed === 3) await this.restartCursor(row, api);
      return { handled: 0, failed: false };
    }
    if (!answer.ts || !answer.updates) throw new ChannelFailedError('VK long poll answered neither updates nor failed');
    const batch = await handleBatch(answer.updates, (update) => this.social.vkEvent(row, update), this.log, {
      integrationId: row.id,
      provider: 'VK',
    });
    if (batch.failed) return batch;
    await this.social.savePollCursor(row.id, answer.ts);
    return batch;
  }

  /** After `failed: 3`: a new session, reading from its `ts` on. */
  private async restartCursor(row: IntegrationRow, api: ReturnType<SocialChannels['vk']['api']>): Promise<void> {
    const fresh = await api.call<VkLongPollServer>('groups.getLongPollServer', {
      group_id: groupIdOf(this.social.channelIntegration(row)),
    });
    this.sessions.set(row.id, { server: fresh.server, key: fresh.key, ts: String(fresh.ts) });
    await this.social.savePollCursor(row.id, String(fresh.ts));
  }
}
