import type { Attachment, AttachmentType, IncomingMessage, SenderProfile } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import { mapUrl, mediaAttachment, type BotKit } from '../bots/bot-kit.js';
import type { TelegramApi, TgFile } from './telegram-api.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * Telegram updates (https://core.telegram.org/bots/api#update) as Parley's IncomingMessage. Only
 * `message` updates carry customers' messages; other kinds (edits, callbacks, membership) are
 * reported as ignored. Media is downloaded (`getFile`, then `<root>/file/bot<token>/<file_path>`)
 * into Parley's storage.
 */

export class MalformedUpdateError extends Error {}

export type Normalized =
  | { kind: 'message'; updateId: number; incoming: IncomingMessage }
  | { kind: 'ignored'; updateId: number; reason: string };

/** Telegram message ids are unique per chat only: Parley's id names both. */
export const telegramMessageId = (chatId: number | string, messageId: number) => `${chatId}:${messageId}`;

/** The message id to quote in `chatId`, from a stored id (`<chat>:<message>`); undefined elsewhere. */
export function messageIdOf(externalId: string | undefined, chatId: string): number | undefined {
  const m = externalId ? /^(-?\d+):(\d+)$/.exec(externalId) : null;
  return m && m[1] === chatId ? Number(m[2]) : undefined;
}

/** Name, username and profile link of a Telegram user or private chat. */
export function chatOf(user: { first_name?: string; last_name?: string; username?: string }): Omit<SenderProfile, 'socialId'> {
  const name = [user.first_name, user.last_name].filter((s) => typeof s === 'string' && s).join(' ');
  const login = typeof user.username === 'string' ? user.username : '';
  return { name, login, profileUrl: login ? `https://t.me/${login}` : '' };
}

async function fileUrl(api: TelegramApi, fileId: string): Promise<string> {
  const file = await api.call<TgFile>('getFile', { file_id: fileId });
  if (!file.file_path) throw new ChannelRejectedError('Telegram gave no file_path');
  return api.fileUrl(file.file_path);
}

/** The user's current profile photo stored in Parley (its URL), or undefined when there is none. */
export async function downloadAvatar(kit: BotKit, api: TelegramApi, accountId: number, userId: number): Promise<string | undefined> {
  const photos = await api.call<{ photos?: Array<Array<{ file_id: string }>> }>('getUserProfilePhotos', { user_id: userId, limit: 1 });
  const best = photos.photos?.[0]?.at(-1);
  if (!best?.file_id) return undefined;
  const attachment = await mediaAttachment(kit, accountId, 'photo', {
    url: () => fileUrl(api, best.file_id),
    filename: `avatar-${userId}.jpg`,
    mime: 'image/jpeg',
  });
  return attachment.url || undefined;
}

const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** Reads an update; throws MalformedUpdateError when it is not one. */
export async function normalizeUpdate(
  kit: BotKit,
  api: TelegramApi,
  integration: { accountId: number },
  update: unknown,
  opts: { needAvatar(socialId: string): Promise<boolean> },
): Promise<Normalized> {
  if (!isObject(update) || !isInt(update.update_id)) throw new MalformedUpdateError('an update needs an integer update_id');
  const updateId = update.update_id;
  if (!('message' in update)) {
    const kind = Object.keys(update).find((k) => k !== 'update_id') ?? 'empty';
    return { kind: 'ignored', updateId, reason: `update kind ${kind}` };
  }
  const m = update.message;
  if (!isObject(m) || !isInt(m.message_id) || !isInt(m.date) || !isObject(m.chat) || !isInt(m.chat.id)) {
    throw new MalformedUpdateError('message needs message_id, date and chat.id');
  }
  if (m.from !== undefined && (!isObject(m.from) || !isInt(m.from.id))) throw new MalformedUpdateError('message.from needs an id');
  const chatId = String(m.chat.id);
  const from = (m.from ?? m.chat) as { id: number; first_name?: string; last_name?: string; username?: string; title?: string };
  const socialId = String(from.id);

  const media = async (type: AttachmentType, file: unknown, filename: string, mime: string): Promise<Attachment> => {
    if (!isObject(file) || typeof file.file_id !== 'string') throw new MalformedUpdateError(`${type} needs a file_id`);
    const size = isInt(file.file_size) ? file.file_size : undefined;
    return mediaAttachment(kit, integration.accountId, type, {
      url: () => fileUrl(api, file.file_id),
      filename: str(file.file_name) || filename,
      mime: str(file.mime_type) || mime,
      size,
    });
  };

  const id = m.message_id;
  const attachments: Attachment[] = [];
  if (Array.isArray(m.photo) && m.photo.length) attachments.push(await media('photo', m.photo.at(-1), `photo-${id}.jpg`, 'image/jpeg'));
  else if (m.animation) attachments.push(await media('video', m.animation, `animation-${id}.mp4`, 'video/mp4'));
  else if (m.video) attachments.push(await media('video', m.video, `video-${id}.mp4`, 'video/mp4'));
  else if (m.video_note) attachments.push(await media('video', m.video_note, `video-note-${id}.mp4`, 'video/mp4'));
  else if (m.voice) attachments.push(await media('audio', m.voice, `voice-${id}.ogg`, 'audio/ogg'));
  else if (m.audio) attachments.push(await media('audio', m.audio, `audio-${id}.mp3`, 'audio/mpeg'));
  else if (m.sticker) {
    const s = isObject(m.sticker) ? m.sticker : {};
    const [ext, mime] = s.is_animated ? ['tgs', 'application/x-tgsticker'] : s.is_video ? ['webm', 'video/webm'] : ['webp', 'image/webp'];
    attachments.push(await media('sticker', m.sticker, `sticker-${id}.${ext}`, mime));
  } else if (m.document) attachments.push(await media('doc', m.document, `document-${id}`, 'application/octet-stream'));

  const lines: string[] = [];
  const text = str(m.text) ?? str(m.caption);
  if (text) lines.push(text);
  if (isObject(m.location)) {
    const { latitude, longitude } = m.location;
    if (typeof latitude !== 'number' || typeof longitude !== 'number')
      throw new MalformedUpdateError('location needs latitude and longitude');
    const title = isObject(m.venue) ? [str(m.venue.title), str(m.venue.address)].filter(Boolean).join(', ') : '';
    attachments.push({ type: 'link', url: mapUrl(latitude, longitude), text: title || 'Location' });
  }
  if (isObject(m.contact)) {
    const c = m.contact;
    const name = [str(c.first_name), str(c.last_name)].filter(Boolean).join(' ');
    lines.push(`Contact: ${[name, str(c.phone_number)].filter(Boolean).join(', ')}`);
  }
  if (!lines.length && !attachments.length) {
    return { kind: 'ignored', updateId, reason: 'message without supported content' };
  }

  const sender: SenderProfile = { socialId, ...chatOf(from) };
  // A contact the person shared of themselves (Telegram's "share my phone number" button): their
  // phone, which fills their customer's (docs/api/search.md "Phones").
  if (isObject(m.contact) && m.from && m.contact.user_id === from.id && str(m.contact.phone_number))
    sender.phone = str(m.contact.phone_number);
  if (!sender.name) sender.name = str(from.title) ?? sender.login ?? socialId;
  if (m.from && (await opts.needAvatar(socialId))) {
    const avatar = await downloadAvatar(kit, api, integration.accountId, from.id).catch((err: unknown) => {
      kit.log.warn({ err, socialId }, 'customer avatar not downloaded');
      return undefined;
    });
    if (avatar) sender.avatar = avatar;
  }
  const reply = isObject(m.reply_to_message) && isInt(m.reply_to_message.message_id) ? m.reply_to_message.message_id : undefined;
  return {
    kind: 'message',
    updateId,
    incoming: {
      externalId: telegramMessageId(chatId, id),
      datetime: m.date * 1000,
      sender,
      channel: { externalId: chatId, type: 'message' },
      text: lines.join('\n'),
      attachments,
      ...(reply !== undefined ? { replyToExternalId: telegramMessageId(chatId, reply) } : {}),
    },
  };
}
