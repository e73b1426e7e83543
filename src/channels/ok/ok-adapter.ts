import { invalid } from '../../domain/errors.js';
import type { ChannelAdapter, ChannelIntegration, ConnectResult, OutgoingMessage, SendResult } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { guardCall, isObject, publicAddress, str } from '../social/social-kit.js';
import { OkApi, OkError } from './ok-api.js';
import { bareId } from './ok-events.js';

/** OK's limit of attachments in one message. */
export const MAX_ATTACHMENTS = 5;
/** The notification types Parley subscribes to. */
export const OK_EVENT_TYPES = ['MESSAGE_CREATED'];

/**
 * `social3`: an OK group's chats with a group token. Connecting checks the token with
 * `GET /graph/me/info` and subscribes (`POST /graph/me/subscribe`): a webhook to
 * `/channels/ok/<id>` when PARLEY_PUBLIC_URL is set, else a long-polling subscription read by the OK
 * poller. Pictures go out by URL (OK fetches them from Parley's public address), other files are
 * uploaded through `fileUploadUrl`.
 */
export class OkAdapter implements ChannelAdapter {
  readonly type = 'social3';

  constructor(private readonly kit: BotKit) {}

  api(integration: Pick<ChannelIntegration, 'credentials'>): OkApi {
    return new OkApi(this.kit.config.okApiUrl, integration.credentials.token ?? '', this.kit.config.sendTimeoutMs);
  }

  /**
   * The webhook address: OK signs nothing, so the address carries a secret derived for the
   * integration, and calls without it are refused.
   */
  webhookUrl(integrationId: number): string | undefined {
    return publicAddress(this.kit, `/channels/ok/${integrationId}?key=${this.webhookKey(integrationId)}`);
  }

  webhookKey(integrationId: number): string {
    return this.kit.webhookSecret('ok', integrationId);
  }

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const api = this.api(integration);
    const me = await api.get<Record<string, unknown>>('info');
    const url = this.webhookUrl(integration.id);
    try {
      const answer = await api.post<{ success?: boolean }>('subscribe', url ? { url } : { types: OK_EVENT_TYPES, longPolling: true });
      if (answer.success === false) throw new OkError(0, 'subscription not accepted');
    } catch (err) {
      if (err instanceof OkError && err.kind !== 'auth') throw invalid(`OK refused the subscription: ${err.reason}`);
      throw err;
    }
    const groupId = bareId(str(me.group_id) ?? str(me.user_id) ?? '', str(me.group_id) ? 'group' : 'user');
    return {
      login: str(me.name) ?? groupId,
      externalId: groupId,
      identifier: groupId,
      avatar: str(me.avatar_url) ?? str(me.pic_128x128) ?? '',
      url: groupId ? `https://ok.ru/group/${groupId}` : '',
    };
  }

  async disconnect(integration: ChannelIntegration): Promise<void> {
    const url = this.webhookUrl(integration.id);
    if (url) await guardCall(this.kit, integration, Date.now(), () => this.api(integration).post('unsubscribe', { url }));
  }

  /** `POST /graph/me/messages/chat:<id>`: text and the attachment in one message. */
  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    const started = Date.now();
    const api = this.api(integration);
    const attachments = message.attachment ? [await this.attachmentOf(integration, api, message.attachment, started)] : [];
    if (attachments.length > MAX_ATTACHMENTS) throw new ChannelRejectedError(`OK takes at most ${MAX_ATTACHMENTS} attachments`);
    const chatId = `chat:${bareId(channel.externalId, 'chat')}`;
    const body = {
      recipient: { chat_id: chatId },
      message: { ...(message.text ? { text: message.text } : {}), ...(attachments.length ? { attachments } : {}) },
    };
    const answer = await guardCall(this.kit, integration, started, () =>
      api.post<{ success?: boolean; message_id?: string }>(`messages/${chatId}`, body),
    );
    if (!answer.message_id) throw new ChannelRejectedError('OK accepted no message');
    return { externalIds: [answer.message_id] };
  }

  private async attachmentOf(
    integration: ChannelIntegration,
    api: OkApi,
    attachment: NonNullable<OutgoingMessage['attachment']>,
    started: number,
  ): Promise<Record<string, unknown>> {
    const media = attachment.media;
    if (attachment.type === 'photo') {
      const url = typeof media.url === 'string' ? media.url : '';
      if (!/^https?:\/\//i.test(url))
        throw new ChannelRejectedError('OK fetches pictures by URL: set PARLEY_PUBLIC_URL so that OK can reach Parley');
      return { type: 'IMAGE', payload: { url } };
    }
    const fileId = typeof media.fileId === 'string' ? media.fileId : '';
    const found = fileId ? await this.kit.readFile(fileId) : undefined;
    if (!found) throw new ChannelRejectedError('The file to send is no longer stored');
    const target = await guardCall(this.kit, integration, started, () =>
      api.get<{ url?: string; file_id?: string }>('fileUploadUrl', { type: 'FILE' }),
    );
    if (!target.url) throw new ChannelRejectedError('OK gave no upload address');
    const uploaded = await api.upload(target.url, { bytes: found.bytes, name: found.file.name, mime: found.file.mime });
    const token = str(uploaded.token) ?? (isObject(uploaded.payload) ? str(uploaded.payload.token) : undefined);
    return { type: 'FILE', payload: token ? { token } : { id: target.file_id } };
  }
}
