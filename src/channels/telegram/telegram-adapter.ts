import { rateLimited } from '../../domain/errors.js';
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
import { TelegramApi, TelegramError, type TgUser } from './telegram-api.js';
import { chatOf, downloadAvatar, messageIdOf, telegramMessageId } from './telegram-updates.js';

/** Telegram's limits: message text and media caption, in UTF-16 code units after entity parsing. */
export const TEXT_LIMIT = 4096;
export const CAPTION_LIMIT = 1024;
/** The only update kind Parley asks for: customers' messages. */
export const ALLOWED_UPDATES = ['message'];

const SEND_METHOD = { photo: ['sendPhoto', 'photo'], doc: ['sendDocument', 'document'], video: ['sendVideo', 'video'] } as const;

/**
 * `msgrb_bot`: a Telegram bot. Connecting checks the token with `getMe` and registers the webhook
 * (`setWebhook` with a per-integration `secret_token`) when PARLEY_PUBLIC_URL is set; otherwise it
 * removes any webhook so that long polling (`getUpdates`, see TelegramPoller) receives updates.
 */
export class TelegramAdapter implements ChannelAdapter {
  readonly type = 'msgrb_bot';

  constructor(private readonly kit: BotKit) {}

  api(integration: Pick<ChannelIntegration, 'credentials'>): TelegramApi {
    return new TelegramApi(this.kit.config.telegramApiUrl, integration.credentials.token ?? '', this.kit.config.sendTimeoutMs);
  }

  /** Where Telegram posts updates of an integration, when Parley has a public address. */
  webhookUrl(integrationId: number): string | undefined {
    const base = this.kit.config.publicUrl?.replace(/\/+$/, '');
    return base ? `${base}/channels/telegram/${integrationId}` : undefined;
  }

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const api = this.api(integration);
    const me = await api.call<TgUser>('getMe');
    const url = this.webhookUrl(integration.id);
    try {
      if (url) {
        await api.call('setWebhook', {
          url,
          secret_token: this.kit.webhookSecret('telegram', integration.id),
          allowed_updates: ALLOWED_UPDATES,
        });
      } else {
        await api.call('deleteWebhook', { drop_pending_updates: false });
      }
    } catch (err) {
      if (err instanceof TelegramError) throw new ChannelWebhookError(`Telegram refused the webhook: ${err.description}`, err.detail());
      throw err;
    }
    const avatar = await downloadAvatar(this.kit, api, integration.accountId, me.id).catch((err: unknown) => {
      this.kit.log.warn({ err, integrationId: integration.id }, 'bot avatar not downloaded');
      return undefined;
    });
    const username = me.username ?? '';
    return {
      login: username || me.first_name || String(me.id),
      externalId: String(me.id),
      identifier: username,
      avatar: avatar ?? '',
      url: username ? `https://t.me/${username}` : '',
    };
  }

  async disconnect(integration: ChannelIntegration): Promise<void> {
    await this.guard(integration, Date.now(), () => this.api(integration).call('deleteWebhook', { drop_pending_updates: false }));
  }

  /**
   * Text (split at 4096), or a file with its caption (a caption over 1024 goes first as text).
   * `replyToExternalId` becomes a native reply on the first message sent.
   */
  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    const started = Date.now();
    const api = this.api(integration);
    const chatId = channel.externalId;
    const text = message.text ?? '';
    const attachment = message.attachment;
    const captioned = !!attachment && text.length <= CAPTION_LIMIT;
    const parts = text && !captioned ? splitText(text, TEXT_LIMIT) : [];
    let reply = messageIdOf(message.replyToExternalId, chatId);
    const replyParams = () => {
      const params = reply === undefined ? {} : { reply_parameters: { message_id: reply, allow_sending_without_reply: true } };
      reply = undefined;
      return params;
    };
    const ids: string[] = [];
    const sent = (m: { message_id: number; chat?: { id: number } }) => ids.push(telegramMessageId(m.chat?.id ?? chatId, m.message_id));
    try {
      for (const part of parts) {
        sent(await this.guard(integration, started, () => api.call('sendMessage', { chat_id: chatId, text: part, ...replyParams() })));
      }
      if (attachment) {
        const form = await this.mediaForm(chatId, attachment, captioned ? text : '', replyParams());
        sent(await this.guard(integration, started, () => api.call(SEND_METHOD[attachment.type][0], form())));
      }
    } catch (err) {
      if (ids.length)
        this.kit.log.warn(
          { integrationId: integration.id, delivered: ids },
          'Telegram refused a later part of a message; earlier parts were delivered',
        );
      throw err;
    }
    return parts.length > 1 ? { externalIds: ids, texts: parts } : { externalIds: ids };
  }

  /** Whether the bot can reach the chat: `getChat` knows it. */
  async checkContact(integration: ChannelIntegration, chatId: string): Promise<boolean> {
    try {
      await this.guard(integration, Date.now(), () => this.api(integration).call('getChat', { chat_id: chatId }));
      return true;
    } catch (err) {
      if (err instanceof TelegramError && (err.errorCode === 400 || err.errorCode === 403)) return false;
      throw err;
    }
  }

  async fetchProfile(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null> {
    const api = this.api(integration);
    const chat = await this.guard(integration, Date.now(), () =>
      api.call<{ id: number; first_name?: string; last_name?: string; username?: string }>('getChat', { chat_id: socialId }),
    );
    const avatar = await downloadAvatar(this.kit, api, integration.accountId, chat.id);
    return { ...chatOf(chat), ...(avatar ? { avatar } : {}) };
  }

  /**
   * Runs a call with the rules every call shares: a refused token flips the integration to `auth
   * failure`; a 429 is retried once after its retry_after when that fits the send timeout, else
   * answered as 429 `rate_limited` with the provider's Retry-After.
   */
  async guard<T>(integration: Pick<ChannelIntegration, 'id'>, started: number, call: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof TelegramError)) throw err;
        if (err.authFailure) {
          await this.kit.authFailed(integration.id, err.detail());
          throw new ChannelCredentialsError(`Telegram refused the bot token: ${err.description}`, err.detail());
        }
        if (err.errorCode === 429) {
          const wait = err.retryAfter ?? 1;
          if (attempt === 0 && retryFits(wait, started, this.kit.config.sendTimeoutMs)) {
            await this.kit.wait(wait * 1000);
            continue;
          }
          throw rateLimited(wait, `Telegram rate limit: ${err.description}`);
        }
        throw err;
      }
    }
  }

  /** The multipart body of a file send (the file uploaded from Parley's storage), rebuilt per attempt. */
  private async mediaForm(
    chatId: string,
    attachment: NonNullable<OutgoingMessage['attachment']>,
    caption: string,
    reply: Record<string, unknown>,
  ): Promise<() => FormData> {
    const fileId = typeof attachment.media.fileId === 'string' ? attachment.media.fileId : '';
    const found = fileId ? await this.kit.readFile(fileId) : undefined;
    if (!found) throw new ChannelRejectedError('The file to send is no longer stored');
    const field = SEND_METHOD[attachment.type][1];
    return () => {
      const form = new FormData();
      form.set('chat_id', chatId);
      if (caption) form.set('caption', caption);
      for (const [key, value] of Object.entries(reply)) form.set(key, JSON.stringify(value));
      form.set(field, new Blob([found.bytes], { type: found.file.mime }), found.file.name);
      return form;
    };
  }
}
