import type { IntegrationRow, MessageRow, ProfileRow, SourceRow } from '../../db/schema.js';
import type { Attachment } from '../channels/channel.js';

/**
 * The History message (docs/api/resources.md), built from stored rows. The same object is the `message` of
 * message events and the items of history pages, so both faces agree by construction.
 */
export interface SourceObject {
  id: string;
  realId: number;
  name: string | null;
  type: string;
  saId: number;
  sender: string;
  token: string | null;
  identifier: string;
  expires: string | null;
}

export interface SaObject {
  id: number;
  type: string;
  login: string;
  avatar: string;
}

/** How an automation rule's reply's customId starts (automation/rule-finish.ts). */
export const AUTOMATION_CUSTOM_ID = 'automation-';

export interface SenderObject {
  /** The customer profile (incoming), or the integration's `externalId` when it is an integer (outgoing). */
  id?: number;
  customerId?: number;
  login?: string;
  avatar?: string;
  type?: string;
  socialId?: string;
  profileUrl?: string;
  userId?: number;
  /** An outgoing message an automation rule sent (docs/api/automation.md); absent otherwise. */
  automation?: true;
}

export interface ReplyToObject {
  messageId: number;
  datetime: number;
  incoming: boolean;
  preview: Record<string, string> | null;
  sender: SenderObject;
  message: { text: string; url: string; attachments: Attachment[] };
}

export interface HistoryMessage {
  messageId: string;
  datetime: number;
  sa: SaObject;
  incoming: boolean;
  message: { text: string; url: string; attachments: Attachment[] };
  sender: SenderObject;
  source: SourceObject;
  replyTo: ReplyToObject | null;
  preview: Record<string, string> | null;
  customId?: string;
  /** Outgoing messages of channels that report delivery: how far the message got. */
  status?: DeliveryStatus;
  /** The provider's reason when `status` is `failed`. */
  error?: DeliveryError;
}

/** Delivery statuses in the order a message moves through them; `failed` ends it. */
export const DELIVERY_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export interface DeliveryError {
  code: number;
  title: string;
  message: string;
}

/** The columns each presenter reads: history pages select only these. */
export type IntegrationPart = Pick<IntegrationRow, 'id' | 'type' | 'login' | 'avatar' | 'identifier' | 'external_id'>;
export type SourcePart = Pick<SourceRow, 'id' | 'external_id' | 'name' | 'type' | 'integration_id' | 'sender' | 'token' | 'expires_at'>;
export type ProfilePart = Pick<ProfileRow, 'id' | 'customer_id' | 'login' | 'avatar' | 'type' | 'social_id' | 'profile_url'>;
export type MessagePart = Pick<
  MessageRow,
  | 'id'
  | 'created_at'
  | 'incoming'
  | 'text'
  | 'url'
  | 'attachments'
  | 'reply_to'
  | 'preview'
  | 'user_id'
  | 'custom_id'
  | 'delivery_status'
  | 'delivery_error'
>;

export function presentSource(source: SourcePart, integration: Pick<IntegrationRow, 'identifier'>): SourceObject {
  return {
    id: source.external_id,
    realId: source.id,
    name: source.name,
    type: source.type,
    saId: source.integration_id,
    sender: source.sender,
    token: source.token,
    identifier: integration.identifier,
    expires: source.expires_at === null ? null : new Date(source.expires_at).toISOString(),
  };
}

export function presentSa(integration: IntegrationPart): SaObject {
  return { id: integration.id, type: integration.type, login: integration.login, avatar: integration.avatar };
}

export function presentSender(
  message: Pick<MessageRow, 'incoming' | 'user_id' | 'custom_id'>,
  integration: IntegrationPart,
  profile: ProfilePart | undefined,
): SenderObject {
  if (message.incoming && profile) {
    return {
      id: profile.id,
      customerId: profile.customer_id,
      login: profile.login,
      avatar: profile.avatar,
      type: profile.type,
      socialId: profile.social_id,
      profileUrl: profile.profile_url,
    };
  }
  const id = integerExternalId(integration.external_id);
  const out: SenderObject = id === undefined ? {} : { id };
  if (message.user_id !== null) out.userId = message.user_id;
  else if (message.custom_id?.startsWith(AUTOMATION_CUSTOM_ID)) out.automation = true;
  return out;
}

/**
 * `sender.id` is an integer (docs/api/resources.md): an integration's `externalId` is one only when
 * it is written as a safe integer (a bot's or a page's numeric id); a phone session's or a
 * widget's is not, and then the outgoing sender has no `id`.
 */
export function integerExternalId(externalId: string): number | undefined {
  if (!/^-?[0-9]{1,16}$/.test(externalId)) return undefined;
  const n = Number(externalId);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** A stored sender (a quoted message's snapshot, an event's payload) as sent now: `id` only when an integer. */
export function senderAsSent(sender: SenderObject | (Omit<SenderObject, 'id'> & { id?: unknown })): SenderObject {
  if (sender.id === undefined || Number.isSafeInteger(sender.id)) return sender as SenderObject;
  const { id: _dropped, ...rest } = sender;
  return rest;
}

export function presentHistoryMessage(
  message: MessagePart,
  source: SourcePart,
  integration: IntegrationPart,
  profile: ProfilePart | undefined,
): HistoryMessage {
  return historyPresenter(source, integration)(message, profile);
}

/**
 * Presents the messages of one channel: `sa` and `source` are made once and shared by every
 * message (a history page has 50 of them). The shared objects are never mutated.
 */
export function historyPresenter(
  source: SourcePart,
  integration: IntegrationPart,
): (message: MessagePart, profile: ProfilePart | undefined) => HistoryMessage {
  const sa = presentSa(integration);
  const sourceObject = presentSource(source, integration);
  return (message, profile) => {
    const out: HistoryMessage = {
      messageId: String(message.id),
      datetime: message.created_at,
      sa,
      incoming: message.incoming === 1,
      message: { text: message.text, url: message.url, attachments: parseAttachments(message.attachments) },
      sender: presentSender(message, integration, profile),
      source: sourceObject,
      replyTo: message.reply_to ? parseReplyTo(message.reply_to) : null,
      preview: message.preview ? (JSON.parse(message.preview) as Record<string, string>) : null,
    };
    if (message.custom_id !== null) out.customId = message.custom_id;
    if (message.delivery_status) {
      out.status = message.delivery_status as DeliveryStatus;
      if (message.delivery_error) out.error = JSON.parse(message.delivery_error) as DeliveryError;
    }
    return out;
  };
}

/** A kept snapshot of a quoted message, its sender as sent now ({@link senderAsSent}). */
function parseReplyTo(json: string): ReplyToObject {
  const quoted = JSON.parse(json) as ReplyToObject;
  quoted.sender = senderAsSent(quoted.sender);
  return quoted;
}

/** Most messages have no attachment: `[]` needs no parser. */
const parseAttachments = (json: string): Attachment[] => (json === '[]' ? [] : (JSON.parse(json) as Attachment[]));

/** The snapshot kept in `reply_to` of a message that quotes `quoted`. */
export function replySnapshot(quoted: MessageRow, integration: IntegrationPart, profile: ProfileRow | undefined): ReplyToObject {
  return {
    messageId: quoted.id,
    datetime: quoted.created_at,
    incoming: quoted.incoming === 1,
    preview: quoted.preview ? (JSON.parse(quoted.preview) as Record<string, string>) : null,
    sender: presentSender(quoted, integration, profile),
    message: { text: quoted.text, url: quoted.url, attachments: JSON.parse(quoted.attachments) as Attachment[] },
  };
}
