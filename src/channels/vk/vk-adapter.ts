import crypto from 'node:crypto';
import { invalid } from '../../domain/errors.js';
import type {
  ChannelAdapter,
  ChannelIntegration,
  ConnectResult,
  OutgoingMessage,
  ProfileUpdate,
  SendResult,
} from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { splitText } from '../bots/http.js';
import { guardCall, isObject, publicAddress } from '../social/social-kit.js';
import { VkApi, VkError } from './vk-api.js';
import { commentId, fetchVkProfile, parseCommentRef, VK_EVENT_TYPES } from './vk-events.js';

/** VK's limit of one message's text. */
export const TEXT_LIMIT = 4096;
/** Title of the Callback API server Parley registers (VK shows it in the community's settings). */
const SERVER_TITLE = 'Parley';

type VkGroup = { id: number; name?: string; screen_name?: string; photo_200?: string };

/** The community id of the credentials, checked: digits only. */
export function groupIdOf(integration: Pick<ChannelIntegration, 'credentials'>): number {
  const raw = (integration.credentials.groupId ?? '').trim().replace(/^-/, '');
  const id = /^\d{1,12}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id) || id < 1) {
    throw invalid('credentials.groupId must be the numeric id of the VK community', [
      { path: 'body.credentials.groupId', message: 'is not a community id' },
    ]);
  }
  return id;
}

/**
 * VK `random_id` of one message of a send: derived from the send's id, so that VK recognizes a
 * repeated call (Parley's retry after a rate limit, or a repeated send with the same customId) and
 * delivers the message once. A positive 31-bit integer (VK's field is int32).
 */
export function randomIdOf(integrationId: number, sendId: string, part: number): number {
  const hash = crypto.createHash('sha256').update(`${integrationId}:${sendId}:${part}`).digest();
  return hash.readUInt32BE(0) & 0x7fffffff || 1;
}

/**
 * `social2_group`: a VK community with a community token (`{token, groupId}`). Connecting checks the
 * token with `groups.getById` and chooses how events arrive: the Callback API (Parley registers its
 * own server with a secret) when PARLEY_PUBLIC_URL is set, else Bots Long Poll (enabled with
 * `groups.setLongPollSettings`; see the VK poller).
 */
export class VkAdapter implements ChannelAdapter {
  readonly type = 'social2_group';

  constructor(private readonly kit: BotKit) {}

  api(integration: Pick<ChannelIntegration, 'credentials'>): VkApi {
    const { config } = this.kit;
    return new VkApi(config.vkApiUrl, integration.credentials.token ?? '', config.vkApiVersion, config.sendTimeoutMs);
  }

  callbackUrl(integrationId: number): string | undefined {
    return publicAddress(this.kit, `/channels/vk/${integrationId}`);
  }

  /** The `secret_key` VK sends in every callback of the integration: derived, nothing stored (VK takes up to 50 letters and digits). */
  callbackSecret(integrationId: number): string {
    return this.kit
      .webhookSecret('vk', integrationId)
      .replace(/[^A-Za-z0-9]/g, '')
      .slice(0, 40);
  }

  /** The events Parley subscribes to, as the flags of setCallbackSettings / setLongPollSettings. */
  private eventFlags(): Record<string, number | string> {
    return { api_version: this.kit.config.vkApiVersion, ...Object.fromEntries(VK_EVENT_TYPES.map((t) => [t, 1])) };
  }

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const groupId = groupIdOf(integration);
    const api = this.api(integration);
    let group: VkGroup | undefined;
    try {
      const answer = await api.call<unknown>('groups.getById', { group_id: groupId, fields: 'photo_200,screen_name' });
      const list = Array.isArray(answer) ? answer : isObject(answer) && Array.isArray(answer.groups) ? answer.groups : [];
      group = list.find((g: unknown): g is VkGroup => isObject(g) && g.id === groupId);
    } catch (err) {
      // 100: no such community. Anything else (5: token refused) keeps the integration as `auth failure`.
      if (err instanceof VkError && err.code === 100) throw invalid(`VK knows no community ${groupId}: ${err.reason}`);
      throw err;
    }
    if (!group)
      throw invalid(`The token is not one of VK community ${groupId}`, [
        { path: 'body.credentials.groupId', message: 'does not match the token' },
      ]);
    try {
      const url = this.callbackUrl(integration.id);
      if (url) await this.registerCallbackServer(api, groupId, url, integration.id);
      else await api.call('groups.setLongPollSettings', { group_id: groupId, enabled: 1, ...this.eventFlags() });
    } catch (err) {
      if (err instanceof VkError && err.kind !== 'auth') throw invalid(`VK refused to deliver the community's events: ${err.reason}`);
      throw err;
    }
    const screenName = group.screen_name ?? `club${groupId}`;
    return {
      login: screenName,
      externalId: String(groupId),
      identifier: String(groupId),
      avatar: group.photo_200 ?? '',
      url: `https://vk.com/${screenName}`,
    };
  }

  /** Registers `<PARLEY_PUBLIC_URL>/channels/vk/<id>` (replacing an earlier registration of it) with the events Parley reads. */
  private async registerCallbackServer(api: VkApi, groupId: number, url: string, integrationId: number): Promise<void> {
    await this.deleteCallbackServers(api, groupId, url);
    const added = await api.call<{ server_id?: number }>('groups.addCallbackServer', {
      group_id: groupId,
      url,
      title: SERVER_TITLE,
      secret_key: this.callbackSecret(integrationId),
    });
    await api.call('groups.setCallbackSettings', { group_id: groupId, server_id: added.server_id, ...this.eventFlags() });
  }

  private async deleteCallbackServers(api: VkApi, groupId: number, url: string): Promise<void> {
    const servers = await api.call<{ items?: Array<{ id: number; url: string }> }>('groups.getCallbackServers', { group_id: groupId });
    for (const server of servers.items ?? []) {
      if (server.url === url) await api.call('groups.deleteCallbackServer', { group_id: groupId, server_id: server.id });
    }
  }

  async disconnect(integration: ChannelIntegration): Promise<void> {
    const url = this.callbackUrl(integration.id);
    if (url)
      await guardCall(this.kit, integration, Date.now(), () =>
        this.deleteCallbackServers(this.api(integration), groupIdOf(integration), url),
      );
  }

  /** The confirmation string VK expects back from the `confirmation` callback. */
  async confirmationCode(integration: ChannelIntegration): Promise<string> {
    const answer = await this.api(integration).call<{ code?: string }>('groups.getCallbackConfirmationCode', {
      group_id: groupIdOf(integration),
    });
    return answer.code ?? '';
  }

  /**
   * A message (`messages.send`, text split at 4096, the file with the last part) or, on a comment
   * channel, a reply comment on the commented object.
   */
  async send(
    integration: ChannelIntegration,
    channel: { externalId: string; type: string },
    message: OutgoingMessage,
  ): Promise<SendResult> {
    const started = Date.now();
    if (channel.type !== 'message') return this.sendComment(integration, channel.externalId, message, started);
    const api = this.api(integration);
    const guard = <T>(call: () => Promise<T>) => guardCall(this.kit, integration, started, call);
    const peerId = channel.externalId;
    const attachment = message.attachment ? await this.uploadAttachment(api, peerId, message.attachment, guard) : undefined;
    const parts = splitText(message.text ?? '', TEXT_LIMIT);
    const sendId = message.sendId ?? crypto.randomUUID();
    const replyTo = /^\d+$/.test(message.replyToExternalId ?? '') ? message.replyToExternalId : undefined;
    const ids: string[] = [];
    try {
      for (const [i, part] of parts.entries()) {
        const last = i === parts.length - 1;
        const sent = await guard(() =>
          api.call<unknown>('messages.send', {
            peer_id: peerId,
            random_id: randomIdOf(integration.id, sendId, i),
            message: part || undefined,
            attachment: last ? attachment : undefined,
            reply_to: i === 0 ? replyTo : undefined,
          }),
        );
        ids.push(String(isObject(sent) ? sent.message_id : sent));
      }
    } catch (err) {
      if (ids.length)
        this.kit.log.warn(
          { integrationId: integration.id, delivered: ids },
          'VK refused a later part of a message; earlier parts were delivered',
        );
      throw err;
    }
    return parts.length > 1 ? { externalIds: ids, texts: parts } : { externalIds: ids };
  }

  /** Whether the community may write to the user (the user allowed its messages). */
  async checkContact(integration: ChannelIntegration, chatId: string): Promise<boolean> {
    if (!/^\d{1,12}$/.test(chatId)) return false;
    const answer = await guardCall(this.kit, integration, Date.now(), () =>
      this.api(integration).call<{ is_allowed?: number }>('messages.isMessagesFromGroupAllowed', {
        group_id: groupIdOf(integration),
        user_id: chatId,
      }),
    );
    return answer.is_allowed === 1;
  }

  async fetchProfile(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null> {
    if (!/^\d+$/.test(socialId)) return null;
    return (await guardCall(this.kit, integration, Date.now(), () => fetchVkProfile(this.api(integration), socialId))) ?? null;
  }

  /**
   * Uploads the file through VK's upload flow and answers its attachment id: pictures with
   * `photos.getMessagesUploadServer` -> upload -> `photos.saveMessagesPhoto`, anything else as a
   * document (`docs.getMessagesUploadServer` -> upload -> `docs.save`).
   */
  private async uploadAttachment(
    api: VkApi,
    peerId: string,
    attachment: NonNullable<OutgoingMessage['attachment']>,
    guard: <T>(call: () => Promise<T>) => Promise<T>,
  ): Promise<string> {
    const fileId = typeof attachment.media.fileId === 'string' ? attachment.media.fileId : '';
    const found = fileId ? await this.kit.readFile(fileId) : undefined;
    if (!found) throw new ChannelRejectedError('The file to send is no longer stored');
    const file = { bytes: found.bytes, name: found.file.name, mime: found.file.mime };
    if (attachment.type === 'photo') {
      const server = await guard(() => api.call<{ upload_url: string }>('photos.getMessagesUploadServer', { peer_id: peerId }));
      const up = await api.upload(server.upload_url, 'photo', file);
      const saved = await guard(() =>
        api.call<Array<{ id: number; owner_id: number; access_key?: string }>>('photos.saveMessagesPhoto', {
          server: up.server as number,
          photo: String(up.photo ?? ''),
          hash: String(up.hash ?? ''),
        }),
      );
      const photo = saved[0];
      if (!photo) throw new ChannelRejectedError('VK saved no photo');
      return `photo${photo.owner_id}_${photo.id}${photo.access_key ? `_${photo.access_key}` : ''}`;
    }
    const server = await guard(() => api.call<{ upload_url: string }>('docs.getMessagesUploadServer', { type: 'doc', peer_id: peerId }));
    const up = await api.upload(server.upload_url, 'file', file);
    const saved = await guard(() => api.call<unknown>('docs.save', { file: String(up.file ?? ''), title: file.name }));
    const doc = isObject(saved) && isObject(saved.doc) ? saved.doc : Array.isArray(saved) && isObject(saved[0]) ? saved[0] : undefined;
    if (!doc) throw new ChannelRejectedError('VK saved no document');
    return `doc${doc.owner_id}_${doc.id}${doc.access_key ? `_${doc.access_key}` : ''}`;
  }

  /** A reply comment, from the community, on the object the channel's comments are about. */
  private async sendComment(
    integration: ChannelIntegration,
    channelId: string,
    message: OutgoingMessage,
    started: number,
  ): Promise<SendResult> {
    const target = parseCommentRef(channelId);
    if (!target) throw new ChannelRejectedError(`${channelId} is not a VK comment channel`);
    if (message.attachment) throw new ChannelRejectedError('Replies to VK comments carry text only');
    if (!message.text) throw new ChannelRejectedError('A reply to a VK comment needs text');
    const groupId = groupIdOf(integration);
    const quoted = parseCommentRef(message.replyToExternalId);
    const sameObject = quoted && quoted.prefix === target.prefix && quoted.owner === target.owner && quoted.item === target.item;
    const base = { owner_id: target.owner, message: message.text, reply_to_comment: sameObject ? quoted.reply : undefined };
    const [method, params] = {
      wall: ['wall.createComment', { ...base, post_id: target.item, from_group: groupId }],
      photo: ['photos.createComment', { ...base, photo_id: target.item, from_group: 1 }],
      video: ['video.createComment', { ...base, video_id: target.item, from_group: 1 }],
      market: ['market.createComment', { ...base, item_id: target.item, from_group: 1 }],
    }[target.prefix] as [string, Record<string, number | string | undefined>];
    const answer = await guardCall(this.kit, integration, started, () => this.api(integration).call<unknown>(method, params));
    const id = isObject(answer) ? answer.comment_id : answer;
    return { externalIds: [commentId(`${target.prefix}${target.owner}_${target.item}`, String(id))] };
  }
}
