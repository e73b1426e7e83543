import { invalid, rateLimited } from '../../domain/errors.js';
import type {
  ChannelAdapter,
  ChannelIntegration,
  ConnectResult,
  OutgoingMessage,
  ProfileUpdate,
  SendResult,
} from '../../domain/channels/channel.js';
import { ChannelCredentialsError, ChannelRejectedError, ChannelWebhookError } from '../../domain/channels/channel.js';
import { retryFits, type BotKit } from '../bots/bot-kit.js';
import { splitText } from '../bots/http.js';
import { ViberApi, ViberError, VIBER_STATUS } from './viber-api.js';

/** Viber's limits: text messages, and the description of a picture. */
export const TEXT_LIMIT = 7000;
export const CAPTION_LIMIT = 512;
/** Callbacks Parley asks for besides messages (which always come). */
export const EVENT_TYPES = ['delivered', 'seen', 'failed', 'subscribed', 'unsubscribed', 'conversation_started'];
/** Viber sends no retry-after with `tooManyRequests`: the wait Parley uses. */
const RATE_LIMIT_WAIT_SECONDS = 1;

/**
 * `msgrc_bot`: a Viber bot. Viber delivers by webhook only, to an HTTPS address it can reach:
 * connecting needs PARLEY_PUBLIC_URL. Files go out by URL (Viber fetches them from Parley's public
 * `/files/...` address). The REST API has no native reply: `replyId` is stored in Parley only.
 */
export class ViberAdapter implements ChannelAdapter {
  readonly type = 'msgrc_bot';

  constructor(private readonly kit: BotKit) {}

  api(integration: Pick<ChannelIntegration, 'credentials'>): ViberApi {
    return new ViberApi(this.kit.config.viberApiUrl, integration.credentials.token ?? '', this.kit.config.sendTimeoutMs);
  }

  webhookUrl(integrationId: number): string | undefined {
    const base = this.kit.config.publicUrl?.replace(/\/+$/, '');
    return base ? `${base}/channels/viber/${integrationId}` : undefined;
  }

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const url = this.webhookUrl(integration.id);
    if (!url) throw invalid('Viber bots receive messages by webhook only: set PARLEY_PUBLIC_URL to an HTTPS address Viber can reach');
    const api = this.api(integration);
    const info = await api.call<{ id?: string; name?: string; uri?: string; icon?: string }>('get_account_info');
    try {
      await api.call('set_webhook', { url, event_types: EVENT_TYPES, send_name: true, send_photo: true });
    } catch (err) {
      if (err instanceof ViberError && !err.authFailure)
        throw new ChannelWebhookError(`Viber refused the webhook: ${err.statusMessage}`, err.detail());
      throw err;
    }
    const uri = info.uri ?? '';
    return {
      login: info.name ?? uri,
      externalId: info.id ?? '',
      identifier: uri,
      avatar: info.icon ?? '',
      url: uri ? `viber://pa?chatURI=${encodeURIComponent(uri)}` : '',
    };
  }

  async disconnect(integration: ChannelIntegration): Promise<void> {
    await this.guard(integration, Date.now(), () => this.api(integration).call('set_webhook', { url: '' }));
  }

  /** Text (split at 7000), then a file by URL: a picture carries a caption up to 512 characters. */
  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    const started = Date.now();
    const api = this.api(integration);
    const base = { receiver: channel.externalId, sender: { name: (integration.login || 'Bot').slice(0, 28) } };
    const text = message.text ?? '';
    const attachment = message.attachment;
    const captioned = attachment?.type === 'photo' && text.length <= CAPTION_LIMIT;
    const parts = text && !captioned ? splitText(text, TEXT_LIMIT) : [];
    const ids: string[] = [];
    const sendOne = async (body: Record<string, unknown>) => {
      const answer = await this.guard(integration, started, () =>
        api.call<{ message_token?: string }>('send_message', { ...base, ...body }),
      );
      ids.push(String(answer.message_token ?? ''));
    };
    try {
      for (const part of parts) await sendOne({ type: 'text', text: part });
      if (attachment) await sendOne(this.mediaBody(attachment, captioned ? text : ''));
    } catch (err) {
      if (ids.length)
        this.kit.log.warn(
          { integrationId: integration.id, delivered: ids },
          'Viber refused a later part of a message; earlier parts were delivered',
        );
      throw err;
    }
    return parts.length > 1 ? { externalIds: ids, texts: parts } : { externalIds: ids };
  }

  /** Whether the user can get the bot's messages: `get_online` knows them (4 = unavailable). */
  async checkContact(integration: ChannelIntegration, chatId: string): Promise<boolean> {
    const answer = await this.guard(integration, Date.now(), () =>
      this.api(integration).call<{ users?: Array<{ id?: string; online_status?: number }> }>('get_online', { ids: [chatId] }),
    ).catch((err: unknown) => {
      if (
        err instanceof ViberError &&
        [VIBER_STATUS.badData, VIBER_STATUS.receiverNotRegistered, VIBER_STATUS.receiverNotSubscribed].includes(err.status as 3)
      )
        return null;
      throw err;
    });
    const user = answer?.users?.find((u) => u.id === chatId);
    return !!user && user.online_status !== 4;
  }

  async fetchProfile(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null> {
    const answer = await this.guard(integration, Date.now(), () =>
      this.api(integration).call<{ user?: { name?: string; avatar?: string } }>('get_user_details', { id: socialId }),
    );
    if (!answer.user) return null;
    return { ...(answer.user.name ? { name: answer.user.name } : {}), ...(answer.user.avatar ? { avatar: answer.user.avatar } : {}) };
  }

  /** Shared rules of every call: refused token -> `auth failure`; tooManyRequests retried once. */
  async guard<T>(integration: Pick<ChannelIntegration, 'id'>, started: number, call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof ViberError)) throw err;
        if (err.authFailure) {
          await this.kit.authFailed(integration.id, err.detail());
          throw new ChannelCredentialsError(`Viber refused the bot token: ${err.statusMessage}`, err.detail());
        }
        if (err.status === VIBER_STATUS.tooManyRequests) {
          if (attempt === 0 && retryFits(RATE_LIMIT_WAIT_SECONDS, started, this.kit.config.sendTimeoutMs)) {
            await this.kit.wait(RATE_LIMIT_WAIT_SECONDS * 1000);
            continue;
          }
          throw rateLimited(RATE_LIMIT_WAIT_SECONDS, `Viber rate limit: ${err.statusMessage}`);
        }
        throw err;
      }
    }
  }

  private mediaBody(attachment: NonNullable<OutgoingMessage['attachment']>, caption: string): Record<string, unknown> {
    const media = attachment.media;
    const url = typeof media.url === 'string' ? media.url : '';
    if (!/^https?:\/\//i.test(url)) {
      throw new ChannelRejectedError('Viber fetches files by URL: set PARLEY_PUBLIC_URL so that Viber can reach Parley');
    }
    const size = Number(media.size ?? 0);
    const name = typeof media.name === 'string' && media.name ? media.name : 'file';
    if (attachment.type === 'photo') return { type: 'picture', media: url, text: caption };
    if (attachment.type === 'video') return { type: 'video', media: url, size };
    return { type: 'file', media: url, size, file_name: name.slice(0, 256) };
  }
}
