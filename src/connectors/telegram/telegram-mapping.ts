import type { Json, RequestResult } from '../bridge-client.js';

/**
 * The mapping between mtcute's objects (a Telegram user account over MTProto) and the account
 * bridge protocol (docs/channels/bridge.md). Pure functions over the fields read from mtcute's
 * Message, User and RpcError, so they are tested on recorded objects without the network.
 */

export interface TgPeer {
  id: number;
  username?: string | null;
  displayName?: string;
  /** mtcute's Chat.chatType; `private` for a one-to-one chat. */
  chatType?: string;
}

export interface TgMedia {
  type: string;
  fileName?: string | null;
  mimeType?: string;
  fileSize?: number | null;
}

export interface TgMessage {
  id: number;
  isOutgoing: boolean;
  chat: TgPeer;
  sender: TgPeer;
  date: Date;
  text: string;
  media: TgMedia | null;
  replyToMessage: { id: number | null } | null;
}

export type AttachmentKind = 'photo' | 'doc' | 'video' | 'audio' | 'sticker';

/** mtcute media types -> the protocol's attachment types; null for media that is not a file (location, poll...). */
export function attachmentKindOf(media: TgMedia | null): AttachmentKind | null {
  switch (media?.type) {
    case 'photo':
      return 'photo';
    case 'video':
      return 'video';
    case 'audio':
    case 'voice':
      return 'audio';
    case 'sticker':
      return 'sticker';
    case 'document':
      return 'doc';
    default:
      return null;
  }
}

/** The file name a received file is stored under. */
export function mediaFileName(msg: TgMessage): string {
  const media = msg.media;
  if (media?.fileName) return media.fileName;
  const ext = media?.type === 'photo' ? 'jpg' : media?.type === 'voice' ? 'ogg' : media?.type === 'video' ? 'mp4' : 'bin';
  return `${media?.type ?? 'file'}-${msg.id}.${ext}`;
}

export function mediaMime(media: TgMedia): string {
  if (media.mimeType) return media.mimeType;
  return media.type === 'photo' ? 'image/jpeg' : 'application/octet-stream';
}

/**
 * A received message as the protocol's `inbound`, or null when it is not one: messages the
 * account sent itself (from another device), and chats other than one-to-one (groups, channels:
 * Parley's personal channel is a person). `attachments` are added by the caller after the upload.
 */
export function inboundOf(msg: TgMessage): Json | null {
  if (msg.isOutgoing) return null;
  if (msg.chat.chatType !== undefined && msg.chat.chatType !== 'private') return null;
  if (!msg.text && !attachmentKindOf(msg.media)) return null;
  const sender = msg.sender;
  return {
    type: 'inbound',
    id: `${msg.chat.id}:${msg.id}`,
    chatId: String(msg.chat.id),
    datetime: msg.date.getTime(),
    sender: {
      socialId: String(sender.id),
      ...(sender.username ? { login: sender.username } : {}),
      ...(sender.displayName ? { name: sender.displayName.slice(0, 255) } : {}),
    },
    ...(msg.text ? { text: msg.text } : {}),
    ...(msg.replyToMessage?.id ? { replyTo: `${msg.chat.id}:${msg.replyToMessage.id}` } : {}),
  };
}

/** The provider id of a message the account sent: the same shape as inbound ids (chat:message). */
export const sentId = (chatId: number, messageId: number) => `${chatId}:${messageId}`;

/** Telegram message ids are per chat: `chat:message` back to its parts, for replies. */
export function parseMessageId(id: string): { chatId: number; messageId: number } | null {
  const m = /^(-?\d+):(\d+)$/.exec(id);
  return m ? { chatId: Number(m[1]), messageId: Number(m[2]) } : null;
}

/** What a contact string names: a phone (international format), a username, or a numeric user id. */
export function contactKind(contact: string): { phone: string } | { username: string } | { id: number } | null {
  const trimmed = contact.trim();
  if (/^\+\d{6,15}$/.test(trimmed)) return { phone: trimmed };
  if (/^-?\d{1,20}$/.test(trimmed)) return { id: Number(trimmed) };
  const username = trimmed.replace(/^@/, '');
  if (/^[A-Za-z][A-Za-z0-9_]{3,31}$/.test(username)) return { username };
  return null;
}

/**
 * An error of mtcute (an RpcError has `code` and `text`) as the request's result: Telegram's
 * final refusals (400 bad request, 403 forbidden, 406) are `refused` with Telegram's reason;
 * flood waits (420), server errors and anything else are `retryable`.
 */
export function resultOfError(err: unknown): RequestResult {
  const e = err as { code?: unknown; text?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'number' ? e.code : undefined;
  const text = typeof e?.text === 'string' ? e.text : typeof e?.message === 'string' ? e.message : String(err);
  if (code === 400 || code === 403 || code === 406) return { ok: false, refused: text.slice(0, 1000) || 'refused' };
  return { ok: false, retryable: text.slice(0, 1000) || 'failed' };
}

/** A user's profile as the protocol's `profile`. */
export function profileOf(user: TgPeer): Json {
  return {
    ...(user.displayName ? { name: user.displayName.slice(0, 255) } : {}),
    ...(user.username ? { login: user.username } : {}),
  };
}

/** The connected account as the protocol's `identity`. */
export function identityOf(me: TgPeer & { phoneNumber?: string | null }): Json {
  return {
    type: 'identity',
    login: me.username ?? (me.phoneNumber ? `+${me.phoneNumber}` : (me.displayName ?? '')),
    externalId: String(me.id),
    identifier: String(me.id),
  };
}
