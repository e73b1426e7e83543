import type { Json, RequestResult } from '../bridge-client.js';

/**
 * The mapping between Baileys' objects (WhatsApp Web multi-device) and the account bridge protocol
 * (docs/channels/bridge.md). Pure functions over the fields read from Baileys' WAMessage
 * (proto.IWebMessageInfo), WAMessageUpdate and Boom errors, so they are tested on recorded objects
 * without the network and without importing Baileys.
 *
 * Chats: a person's chat `<digits>@s.whatsapp.net` is named by the phone in international format
 * (`+<digits>`), which is also what write first takes, so a contact written to first by phone and
 * answering later is one customer. Chats WhatsApp names by a private id (`<id>@lid`) keep the jid.
 * Message ids are `<chat>/<1 if the account wrote it, else 0>/<WhatsApp id>`: a reply needs the
 * chat and the author of the quoted message.
 */

export interface WaKey {
  remoteJid?: string | null;
  fromMe?: boolean | null;
  id?: string | null;
  participant?: string | null;
}

interface WaMedia {
  caption?: string | null;
  mimetype?: string | null;
  fileName?: string | null;
  fileLength?: number | { toNumber(): number } | null;
  ptt?: boolean | null;
  contextInfo?: WaContext | null;
}

interface WaContext {
  stanzaId?: string | null;
  participant?: string | null;
}

export interface WaContent {
  conversation?: string | null;
  extendedTextMessage?: { text?: string | null; contextInfo?: WaContext | null } | null;
  imageMessage?: WaMedia | null;
  videoMessage?: WaMedia | null;
  audioMessage?: WaMedia | null;
  documentMessage?: WaMedia | null;
  stickerMessage?: WaMedia | null;
  ephemeralMessage?: { message?: WaContent | null } | null;
  viewOnceMessage?: { message?: WaContent | null } | null;
  viewOnceMessageV2?: { message?: WaContent | null } | null;
  documentWithCaptionMessage?: { message?: WaContent | null } | null;
  [other: string]: unknown;
}

export interface WaMessage {
  key: WaKey;
  message?: WaContent | null;
  messageTimestamp?: number | { toNumber(): number } | null;
  pushName?: string | null;
}

export type AttachmentKind = 'photo' | 'doc' | 'video' | 'audio' | 'sticker';

const MEDIA_FIELDS: Array<[keyof WaContent, AttachmentKind]> = [
  ['imageMessage', 'photo'],
  ['videoMessage', 'video'],
  ['audioMessage', 'audio'],
  ['documentMessage', 'doc'],
  ['stickerMessage', 'sticker'],
];

const PERSON = /^(\d{5,20})@s\.whatsapp\.net$/;

/** A chat jid as the protocol's chat/social id: `+<digits>` for a phone's chat, else the jid. */
export function chatIdOf(jid: string): string {
  const m = PERSON.exec(jid);
  return m ? `+${m[1]}` : jid;
}

/** A protocol chat id (or a contact: a phone in international format) back to a jid; null when it is neither. */
export function jidOf(chatId: string): string | null {
  const trimmed = chatId.trim();
  const phone = /^\+?(\d{6,15})$/.exec(trimmed.replace(/[\s()-]/g, ''));
  if (phone) return `${phone[1]}@s.whatsapp.net`;
  if (/^[\w.:-]{1,100}@(s\.whatsapp\.net|lid)$/.test(trimmed)) return trimmed.replace(/:\d+@/, '@');
  return null;
}

/** Only people's chats: groups, status broadcasts, broadcast lists and channels are left out. */
export function isPersonJid(jid: string | null | undefined): jid is string {
  return !!jid && (jid.endsWith('@s.whatsapp.net') || jid.endsWith('@lid'));
}

/** The message inside WhatsApp's wrappers (disappearing, view once, document with caption). */
export function unwrap(content: WaContent | null | undefined): WaContent | undefined {
  let c = content ?? undefined;
  for (let i = 0; i < 4 && c; i++) {
    const inner =
      c.ephemeralMessage?.message ?? c.viewOnceMessage?.message ?? c.viewOnceMessageV2?.message ?? c.documentWithCaptionMessage?.message;
    if (!inner) break;
    c = inner;
  }
  return c;
}

/** The file a message carries: its kind and Baileys' media message (the caller downloads it). */
export function mediaOf(content: WaContent | undefined): { kind: AttachmentKind; media: WaMedia } | null {
  for (const [field, kind] of MEDIA_FIELDS) {
    const media = content?.[field] as WaMedia | null | undefined;
    if (media) return { kind, media };
  }
  return null;
}

function textOf(content: WaContent | undefined): string {
  if (!content) return '';
  if (content.conversation) return content.conversation;
  if (content.extendedTextMessage?.text) return content.extendedTextMessage.text;
  return mediaOf(content)?.media.caption ?? '';
}

function contextOf(content: WaContent | undefined): WaContext | null | undefined {
  return content?.extendedTextMessage?.contextInfo ?? mediaOf(content)?.media.contextInfo;
}

const num = (v: number | { toNumber(): number } | null | undefined) => (v == null ? undefined : typeof v === 'number' ? v : v.toNumber());

/** The provider id of a message: chat, author (1: the account), WhatsApp id. */
export const messageId = (chatJid: string, fromMe: boolean, id: string) => `${chatIdOf(chatJid)}/${fromMe ? 1 : 0}/${id}`;

/** A message id back to Baileys' key (for quoting it in a reply). */
export function keyOf(id: string): { remoteJid: string; fromMe: boolean; id: string } | null {
  const [, chat, author, waId] = /^(.+)\/([01])\/([^/]+)$/.exec(id) ?? [];
  const jid = chat ? jidOf(chat) : null;
  return jid && waId ? { remoteJid: jid, fromMe: author === '1', id: waId } : null;
}

/** The file name a received file is stored under. */
export function mediaFileName(kind: AttachmentKind, media: WaMedia, id: string): string {
  if (media.fileName) return media.fileName.slice(0, 255);
  const sub = baseMime(media.mimetype ?? '').split('/')[1];
  const ext =
    kind === 'photo' ? 'jpg' : kind === 'sticker' ? 'webp' : media.ptt ? 'ogg' : sub && /^[a-z0-9.+-]{1,10}$/.test(sub) ? sub : 'bin';
  return `${kind}-${id}.${ext}`;
}

/** `audio/ogg; codecs=opus` -> `audio/ogg`. */
const baseMime = (mime: string) => mime.replace(/;.*$/, '').trim();

export function mediaMime(kind: AttachmentKind, media: WaMedia): string {
  if (media.mimetype) return baseMime(media.mimetype);
  return kind === 'photo' ? 'image/jpeg' : kind === 'sticker' ? 'image/webp' : 'application/octet-stream';
}

export const mediaSize = (media: WaMedia) => num(media.fileLength);

/**
 * A received message (of `messages.upsert`) as the protocol's `inbound`, or null when it is not
 * one: messages the account wrote (from the phone or this connector), chats that are not a
 * person's (groups, `status@broadcast`, broadcast lists, channels), and messages with neither
 * text nor a file (reactions, protocol messages, polls, locations). `attachments` are added by the
 * caller after the upload. `ownJid` tells whether a quoted message was the account's own.
 */
export function inboundOf(msg: WaMessage, ownJid: string): Json | null {
  const { remoteJid, fromMe, id } = msg.key;
  if (fromMe || !isPersonJid(remoteJid) || !id) return null;
  const content = unwrap(msg.message);
  const text = textOf(content);
  if (!text && !mediaOf(content)) return null;
  const chatId = chatIdOf(remoteJid);
  const quoted = contextOf(content);
  const quotedFromMe = !!quoted?.participant && sameUser(quoted.participant, ownJid);
  const seconds = num(msg.messageTimestamp);
  return {
    type: 'inbound',
    id: messageId(remoteJid, false, id),
    chatId,
    datetime: seconds !== undefined ? seconds * 1000 : Date.now(),
    sender: {
      socialId: chatId,
      ...(chatId.startsWith('+') ? { login: chatId } : {}),
      ...(msg.pushName ? { name: msg.pushName.slice(0, 255) } : {}),
    },
    ...(text ? { text: text.slice(0, 65536) } : {}),
    ...(quoted?.stanzaId ? { replyTo: messageId(remoteJid, quotedFromMe, quoted.stanzaId) } : {}),
  };
}

/** `12345:7@s.whatsapp.net` and `12345@s.whatsapp.net` are one user (a device of it). */
export function sameUser(a: string, b: string): boolean {
  const user = (jid: string) => jid.replace(/:\d+@/, '@');
  return user(a) === user(b);
}

/**
 * `messages.update` entries as the protocol's `status`: receipts of messages the account sent to a
 * person (DELIVERY_ACK -> delivered, READ and PLAYED -> read). Pending, server acks and errors are
 * no status of the protocol.
 */
export function statusesOf(updates: Array<{ key: WaKey; update: { status?: number | null } }>): Json[] {
  const out: Json[] = [];
  for (const { key, update } of updates) {
    if (!key.fromMe || !key.id || !isPersonJid(key.remoteJid) || typeof update.status !== 'number') continue;
    const status = update.status === 3 ? 'delivered' : update.status === 4 || update.status === 5 ? 'read' : null;
    if (status) out.push({ type: 'status', messageId: messageId(key.remoteJid, true, key.id), status });
  }
  return out;
}

/**
 * An error of Baileys (a Boom: `output.statusCode`, `message`) as the request's result. WhatsApp's
 * final refusals (400 bad request, 403 forbidden, 404 no such user, 406) are `refused`; a closed
 * or lost connection (428, 408), a restart (515), server errors and anything else are `retryable`.
 */
export function resultOfError(err: unknown): RequestResult {
  const e = err as { output?: { statusCode?: unknown }; message?: unknown } | null;
  const code = typeof e?.output?.statusCode === 'number' ? e.output.statusCode : undefined;
  const text = (typeof e?.message === 'string' ? e.message : String(err)).slice(0, 1000);
  if (code === 400 || code === 403 || code === 404 || code === 406) return { ok: false, refused: text || 'refused' };
  return { ok: false, retryable: text || 'failed' };
}

/** What `connection.update`'s close means for the session (Baileys' DisconnectReason codes). */
export function closeKind(lastDisconnect: { error?: unknown } | undefined): {
  kind: 'lost' | 'restart' | 'replaced' | 'reconnect';
  code?: number;
  reason: string;
} {
  const err = lastDisconnect?.error as { output?: { statusCode?: unknown }; message?: unknown } | undefined;
  const code = typeof err?.output?.statusCode === 'number' ? err.output.statusCode : undefined;
  const reason = typeof err?.message === 'string' ? err.message.slice(0, 500) : 'connection closed';
  if (code === 401) return { kind: 'lost', code, reason: `logged out from the phone (${reason})` };
  if (code === 403) return { kind: 'lost', code, reason: `WhatsApp refused the account (${reason})` };
  if (code === 440) return { kind: 'replaced', code, reason: 'another client connected with this session' };
  if (code === 515) return { kind: 'restart', code, reason };
  return { kind: 'reconnect', ...(code !== undefined ? { code } : {}), reason };
}

/** The connected account (Baileys' `sock.user`) as the protocol's `identity`. */
export function identityOf(user: { id: string; name?: string | null }, avatar?: string): Json {
  const chat = chatIdOf(user.id.replace(/:\d+@/, '@'));
  return {
    type: 'identity',
    login: chat,
    externalId: chat,
    identifier: user.name ? user.name.slice(0, 255) : chat,
    ...(avatar ? { avatar } : {}),
  };
}

/** A contact's profile: the push name the account has seen, the phone, the picture URL. */
export function profileOf(chatId: string, pushName: string | undefined, picture: string | undefined): Json {
  return {
    ...(pushName ? { name: pushName.slice(0, 255) } : {}),
    ...(chatId.startsWith('+') ? { login: chatId } : {}),
    ...(picture && picture.length <= 2048 ? { avatar: picture } : {}),
  };
}

/** The content of a send: Baileys' AnyMessageContent for a file of Parley, by the protocol's attachment type. */
export function mediaContent(type: string, bytes: Uint8Array, meta: { mime?: string; name?: string; caption?: string }): Json {
  const buffer = Buffer.from(bytes);
  const caption = meta.caption ? { caption: meta.caption } : {};
  const mimetype = meta.mime ? { mimetype: meta.mime } : {};
  switch (type) {
    case 'photo':
      return { image: buffer, ...caption, ...mimetype };
    case 'video':
      return { video: buffer, ...caption, ...mimetype };
    case 'audio':
      return { audio: buffer, mimetype: meta.mime ?? 'audio/ogg; codecs=opus' };
    case 'sticker':
      return { sticker: buffer };
    default:
      return { document: buffer, mimetype: meta.mime ?? 'application/octet-stream', fileName: meta.name ?? 'file', ...caption };
  }
}
