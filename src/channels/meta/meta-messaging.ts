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
import { GraphApi, GraphError, guardToken } from './graph-api.js';

/** Messenger and Instagram answer freely for 24 hours after the customer's last message. */
export const MESSAGING_WINDOW_MS = 24 * 60 * 60 * 1000;
/** The HUMAN_AGENT tag allows an answer up to 7 days after the customer's last message. */
export const HUMAN_AGENT_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

export const GRAPH_ID = /^\d{1,30}$/;
/**
 * The `message.metadata` Parley puts on its own sends: Meta hands it back on their echoes, so an
 * echo of a Parley send is recognised even when it arrives before Parley committed the send.
 */
export const PARLEY_ECHO_METADATA = 'parley';

/** Page-scoped / Instagram-scoped user ids are numbers too: nothing else goes into a Graph path. */
export const SCOPED_ID = /^\d{1,40}$/;
/** Comment and post ids: Page ones are `<post>_<comment>`, Instagram ones plain numbers. */
export const COMMENT_ID = /^\d{1,40}(?:_\d{1,40})?$/;

export type MetaAttachmentKind = 'image' | 'video' | 'file';
export type OutgoingFile = NonNullable<OutgoingMessage['attachment']>;

/**
 * What Messenger (`social1_messenger`) and Instagram direct messages (`photonetV3`) share: the
 * Send API (`POST /{id}/messages` with `recipient.id`, `messaging_type` and `message`), its
 * 24-hour window with the HUMAN_AGENT tag, user profiles and token refusals. Each product says
 * its host, token, text limit, how a file is attached and how connecting checks the credentials.
 */
export abstract class MetaMessagingAdapter implements ChannelAdapter {
  abstract readonly type: string;
  /** The product's name in refusals. */
  protected abstract readonly product: string;
  /** Characters of text one message holds. */
  protected abstract readonly textLimit: number;

  constructor(protected readonly kit: BotKit) {}

  abstract connect(integration: ChannelIntegration): Promise<ConnectResult>;
  /** The Graph root of the product. */
  protected abstract root(): string;
  /** The token of the integration's credentials. */
  protected abstract token(integration: Pick<ChannelIntegration, 'credentials'>): string;
  /** The `attachment.payload` naming a file Parley stores. */
  protected abstract attachmentPayload(
    integration: ChannelIntegration,
    kind: MetaAttachmentKind,
    file: OutgoingFile,
  ): Promise<Record<string, unknown>>;
  /** The Graph fields of a user profile, and how they read. */
  protected abstract profileOf(integration: ChannelIntegration, userId: string): Promise<ProfileUpdate | null>;

  api(integration: Pick<ChannelIntegration, 'credentials'>): GraphApi {
    const { metaGraphVersion, sendTimeoutMs } = this.kit.config;
    return new GraphApi({ root: this.root(), version: metaGraphVersion, token: this.token(integration), timeoutMs: sendTimeoutMs });
  }

  /** `settings.humanAgent: true` lets answers go with the HUMAN_AGENT tag up to 7 days. */
  lateReply(integration: ChannelIntegration): { withinMs: number; closedReason: string } {
    if (integration.settings.humanAgent === true) {
      return {
        withinMs: HUMAN_AGENT_WINDOW_MS - MESSAGING_WINDOW_MS,
        closedReason: 'outside the 7-day human agent window: wait for the customer to write again',
      };
    }
    return {
      withinMs: 0,
      closedReason:
        'outside the 24-hour window: wait for the customer to write again, or enable the HUMAN_AGENT tag (settings.humanAgent) to answer up to 7 days',
    };
  }

  /**
   * Text (split at the product's limit), then the file as its own message. `replyToExternalId`
   * makes the first message a reply; a `late` message goes as `MESSAGE_TAG` + `HUMAN_AGENT`.
   */
  async send(integration: ChannelIntegration, channel: { externalId: string }, message: OutgoingMessage): Promise<SendResult> {
    this.requireConnected(integration);
    if (!SCOPED_ID.test(channel.externalId)) throw new ChannelRejectedError(`This ${this.product} channel has no user id to answer`);
    const base = {
      recipient: { id: channel.externalId },
      ...(message.late ? { messaging_type: 'MESSAGE_TAG', tag: 'HUMAN_AGENT' } : { messaging_type: 'RESPONSE' }),
    };
    const ids: string[] = [];
    let replyTo = message.replyToExternalId;
    const sendOne = async (body: Record<string, unknown>) => {
      const withReply = { ...body, ...(replyTo ? { reply_to: { mid: replyTo } } : {}), metadata: PARLEY_ECHO_METADATA };
      replyTo = undefined;
      const answer = await this.guard(integration, () =>
        this.api(integration).post<{ message_id?: string }>(`${integration.externalId}/messages`, { ...base, message: withReply }),
      );
      ids.push(String(answer.message_id ?? ''));
    };
    const parts = message.text ? splitText(message.text, this.textLimit) : [];
    try {
      for (const part of parts) await sendOne({ text: part });
      if (message.attachment) {
        const kind = metaAttachmentKind(message.attachment.type);
        const payload = await this.attachmentPayload(integration, kind, message.attachment);
        await sendOne({ attachment: { type: kind, payload } });
      }
    } catch (err) {
      if (ids.length)
        this.kit.log.warn(
          { integrationId: integration.id, delivered: ids },
          `${this.product} refused a later part of a message; earlier parts were delivered`,
        );
      throw err;
    }
    return parts.length > 1 ? { externalIds: ids, texts: parts } : { externalIds: ids };
  }

  /**
   * A private reply (https://developers.facebook.com/docs/messenger-platform/discovery/private-replies):
   * the Send API with `recipient: {comment_id}`, from this direct-message integration. Meta answers
   * the author's page- or Instagram-scoped id as `recipient_id`.
   */
  async sendPrivateReply(
    integration: ChannelIntegration,
    commentId: string,
    text: string,
  ): Promise<{ externalId: string; recipientId: string | undefined }> {
    this.requireConnected(integration);
    if (!COMMENT_ID.test(commentId)) throw new ChannelRejectedError('This comment has no id Meta can answer');
    const answer = await this.guard(integration, () =>
      this.api(integration).post<{ message_id?: string; recipient_id?: string }>(`${integration.externalId}/messages`, {
        recipient: { comment_id: commentId },
        message: { text, metadata: PARLEY_ECHO_METADATA },
      }),
    );
    const recipient = answer.recipient_id === undefined ? undefined : String(answer.recipient_id);
    return { externalId: String(answer.message_id ?? ''), recipientId: recipient && SCOPED_ID.test(recipient) ? recipient : undefined };
  }

  /** The customer's name and picture from the Graph user profile; null when Meta does not tell. */
  async fetchProfile(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null> {
    if (!SCOPED_ID.test(socialId)) return null;
    try {
      return await this.guard(integration, () => this.profileOf(integration, socialId));
    } catch (err) {
      // A profile Meta will not show (privacy, a deleted user) leaves the customer as they were.
      if (err instanceof ChannelRejectedError) return null;
      throw err;
    }
  }

  /** A refused token marks the integration `auth failure` (and the call is refused: 422). */
  protected guard<T>(integration: Pick<ChannelIntegration, 'id'>, call: () => Promise<T>): Promise<T> {
    return guardToken(this.kit, integration.id, call);
  }

  /** Graph paths are built of the ids connect checked: an integration Meta never accepted has none. */
  protected requireConnected(integration: Pick<ChannelIntegration, 'externalId'>): void {
    if (!GRAPH_ID.test(integration.externalId)) {
      throw new ChannelRejectedError(`This ${this.product} account was never connected (Meta refused its credentials): connect it again`);
    }
  }

  /** Connect's Graph read: a refused token stays an auth failure; other refusals are 400 with Meta's text. */
  protected async connectRead<T>(call: () => Promise<T>, what: string): Promise<T> {
    try {
      return await call();
    } catch (err) {
      if (err instanceof GraphError && !err.authFailure) {
        throw invalid(`Meta refused the ${what}: ${err.message}`);
      }
      throw err;
    }
  }
}

export function metaAttachmentKind(type: OutgoingFile['type']): MetaAttachmentKind {
  return type === 'photo' ? 'image' : type === 'video' ? 'video' : 'file';
}
