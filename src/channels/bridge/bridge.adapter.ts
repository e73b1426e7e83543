import type { ChannelAdapter, ChannelIntegration, OutgoingMessage, ProfileUpdate, SendResult } from '../../domain/channels/channel.js';
import type { BridgeHub } from '../../domain/bridge/bridge-hub.js';

/**
 * The channel adapter of every bridge-served type: a send, a contact check or a profile read
 * becomes a request to the integration's bridge (docs/channels/bridge.md), wherever it is
 * connected. Nothing here knows the provider: the bridge does.
 */
export class BridgeAdapter implements ChannelAdapter {
  constructor(
    readonly type: string,
    private readonly hub: BridgeHub,
  ) {}

  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    const media = message.attachment?.media as { url?: unknown; name?: unknown; mime?: unknown; size?: unknown } | undefined;
    const body = {
      chatId: channel.externalId,
      ...(message.text ? { text: message.text } : {}),
      ...(message.attachment && typeof media?.url === 'string'
        ? {
            attachment: {
              type: message.attachment.type,
              url: media.url,
              ...(typeof media.name === 'string' ? { name: media.name } : {}),
              ...(typeof media.mime === 'string' ? { mime: media.mime } : {}),
              ...(typeof media.size === 'number' ? { size: media.size } : {}),
            },
          }
        : {}),
      ...(message.replyToExternalId ? { replyTo: message.replyToExternalId } : {}),
    };
    const result = await this.hub.request(integration.id, 'send', body, { requireActive: true });
    return { externalIds: result.externalIds ?? [], ...(result.chatId ? { chatId: result.chatId } : {}) };
  }

  /** The owner disconnects the integration: its bridge is told to stop (close 4410). */
  async disconnect(integration: ChannelIntegration): Promise<void> {
    await this.hub.disconnected(integration.id);
  }

  async checkContact(integration: ChannelIntegration, contact: string): Promise<boolean> {
    const result = await this.hub.request(integration.id, 'check', { contact }, { requireActive: true });
    return result.exists === true;
  }

  async fetchProfile(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null> {
    const result = await this.hub.request(integration.id, 'profile', { socialId }, { requireActive: true });
    return result.profile ?? null;
  }
}
