import type { SourceType } from './integration-types.js';

/**
 * One adapter per integration type (Telegram bot, Viber bot, the site widget...), all behind this
 * interface. The conversations core calls adapters; adapters never touch the database.
 */

/** What an adapter knows of a connected integration. Credentials arrive decrypted. */
export interface ChannelIntegration {
  id: number;
  accountId: number;
  type: string;
  login: string;
  externalId: string;
  identifier: string;
  credentials: Record<string, string>;
  settings: Record<string, unknown>;
}

export type AttachmentType = 'photo' | 'doc' | 'link' | 'video' | 'audio' | 'sticker' | 'market';

export interface Attachment {
  type: AttachmentType;
  url: string;
  /** The file's name. */
  text?: string;
  preview?: string;
  filesize?: number;
}

export interface SenderProfile {
  socialId: string;
  login?: string;
  name?: string;
  avatar?: string;
  profileUrl?: string;
  /**
   * The sender's own phone in international form, as the provider gave it (a Telegram user sharing
   * their own contact): stored in E.164 on a customer that has no phone yet (docs/api/search.md "Phones").
   */
  phone?: string;
}

/** A provider payload normalized: what the ingest pipeline stores. */
export interface IncomingMessage {
  /** Provider message id: a redelivery with the same id is stored once. */
  externalId: string;
  /** Unix milliseconds. */
  datetime: number;
  sender: SenderProfile;
  channel: { externalId: string; type: SourceType; name?: string | null; token?: string | null; expiresAt?: number | null };
  text?: string;
  url?: string;
  attachments?: Attachment[];
  /** The provider id of the quoted message, when the customer replied to one. */
  replyToExternalId?: string;
  preview?: { photo?: string; description?: string; owner?: string; url?: string } | null;
}

export interface OutgoingMessage {
  text?: string;
  attachment?: { type: 'photo' | 'doc' | 'video'; media: Record<string, unknown> };
  template?: Record<string, unknown>;
  /** Provider id of the message being answered. */
  replyToExternalId?: string;
  /**
   * Names this send: the same for a repeat with the same `customId`, new otherwise. Providers with
   * idempotency keys (VK `random_id`) derive theirs from it so a repeat is not delivered twice.
   */
  sendId?: string;
  /** The integrator's id of the send: providers that echo an opaque value in their reports get it. */
  customId?: string;
  /** Sent after the channel's answer deadline, within the adapter's {@link ChannelAdapter.lateReply} allowance. */
  late?: boolean;
}

/** The provider accepted the message: its ids, one per message it became (text + file may be two). */
export interface SendResult {
  externalIds: string[];
  /**
   * When the provider made several messages of the text (split at its length limit): the text of
   * each, in order. Their ids come first in `externalIds`; a file sent apart comes last.
   */
  texts?: string[];
  /**
   * The provider's canonical id of the chat written to, when it differs from the one asked (a
   * bridge's write first, docs/channels/bridge.md "Write first"): the contact's channel is stored
   * under it, so that the person's answer on that chat joins the same lead.
   */
  chatId?: string;
}

export interface ProfileUpdate {
  name?: string;
  login?: string;
  avatar?: string;
  profileUrl?: string;
}

export interface ConnectResult {
  login: string;
  externalId: string;
  identifier: string;
  avatar: string;
  url: string;
}

export interface ChannelAdapter {
  readonly type: string;
  /** Checks credentials with the provider and reads the connected account. */
  connect?(integration: ChannelIntegration): Promise<ConnectResult>;
  disconnect?(integration: ChannelIntegration): Promise<void>;
  /**
   * Sends a test message to an address the owner gives (their own phone), where the provider allows
   * a business to write first; answers the provider's message id.
   */
  sendTest?(integration: ChannelIntegration, to: string): Promise<{ messageId: string }>;
  send(
    integration: ChannelIntegration,
    channel: { externalId: string; type: string; token: string | null },
    message: OutgoingMessage,
  ): Promise<SendResult>;
  checkContact?(integration: ChannelIntegration, chatId: string): Promise<boolean>;
  /** Reads the customer's current profile (avatar refresh). */
  fetchProfile?(integration: ChannelIntegration, socialId: string): Promise<ProfileUpdate | null>;
  /**
   * How long after a channel's answer deadline (`expires`) a message may still go, marked `late`
   * (Messenger's HUMAN_AGENT tag: up to 7 days after the customer's message, when the integration's
   * settings enable it), and the reason a send is refused after that.
   */
  lateReply?(integration: ChannelIntegration): { withinMs: number; closedReason: string };
  /**
   * Comment channels that can be answered privately (Meta's private replies): one direct message
   * to a comment's author, sent through the direct-message integration of type `dmType` that shares
   * the comment integration's `identifier`, within `windowMs` of the comment.
   */
  readonly privateReplies?: PrivateReplies;
}

export interface PrivateReplies {
  /** The integration type the reply goes through and lands in (its DM lead). */
  readonly dmType: string;
  /** How long after the comment a private reply may go. */
  readonly windowMs: number;
  /** Sends the reply with the DM integration's credentials: its message id and the DM-scoped id of the comment's author. */
  send(dm: ChannelIntegration, commentExternalId: string, text: string): Promise<{ externalId: string; recipientId: string | undefined }>;
}

/** Provider refused the message (blocked bot, invalid chat): 422 with the provider's reason. */
export class ChannelRejectedError extends Error {
  /** The refusal as the provider put it, with its code where it gives one ("401 Unauthorized"): the owner's sentences quote it. */
  detail(): string {
    return this.message;
  }
}
/** A refusal that carries the provider's own words (`reason`, as {@link ChannelRejectedError.detail}) apart from the answer's message. */
class ReasonedRefusal extends ChannelRejectedError {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
  override detail(): string {
    return this.reason;
  }
}
/** Provider refused the integration's credentials (a revoked token): 422, and the integration is `auth failure` with the refusal in its health. */
export class ChannelCredentialsError extends ReasonedRefusal {}
/**
 * Provider refused to register Parley's webhook address: a connect is refused with 400 and keeps
 * nothing; a reconnect keeps the integration with the refusal in its health.
 */
export class ChannelWebhookError extends ReasonedRefusal {}
/** Provider failed (5xx, network): 502. */
export class ChannelFailedError extends Error {}
/** Provider did not answer in time: 504. */
export class ChannelTimeoutError extends Error {}
/** No bridge (or provider session) is connected to carry the message: 502 `channel_offline`. */
export class ChannelOfflineError extends Error {}
