import crypto from 'node:crypto';
import type { Attachment, AttachmentType, IncomingMessage } from '../../domain/channels/channel.js';
import { mapUrl, mediaAttachment, sameSecret, type BotKit } from '../bots/bot-kit.js';
import { parseJsonKeepingIds } from '../bots/http.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * Viber callbacks (https://developers.viber.com/docs/api/rest-bot-api/#callbacks): `message`
 * becomes an IncomingMessage; `webhook`, `subscribed`, `unsubscribed`, `conversation_started`,
 * `delivered`, `seen`, `failed` are acknowledged and ignored. Every callback is signed:
 * `X-Viber-Content-Signature` = hex HMAC-SHA256 of the raw body keyed with the bot's token.
 */

export class MalformedEventError extends Error {}

export type NormalizedEvent = { kind: 'message'; incoming: IncomingMessage } | { kind: 'ignored'; event: string; reason: string };

export function viberSignature(token: string, raw: Buffer | string): string {
  return crypto.createHmac('sha256', token).update(raw).digest('hex');
}

export function signatureMatches(token: string, raw: Buffer, header: string | undefined): boolean {
  return !!token && sameSecret(header?.toLowerCase(), viberSignature(token, raw));
}

const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export function parseEvent(raw: Buffer): ProviderJson {
  let parsed: unknown;
  try {
    parsed = parseJsonKeepingIds(raw.toString('utf8'), ['message_token']);
  } catch {
    throw new MalformedEventError('body is not JSON');
  }
  if (!isObject(parsed) || typeof parsed.event !== 'string') throw new MalformedEventError('a callback needs an event');
  return parsed;
}

export async function normalizeEvent(kit: BotKit, integration: { accountId: number }, event: ProviderJson): Promise<NormalizedEvent> {
  if (event.event !== 'message') return { kind: 'ignored', event: event.event, reason: `event ${event.event}` };
  const { message: m, sender } = event;
  const token = str(event.message_token);
  if (
    !token ||
    !/^\d+$/.test(token) ||
    typeof event.timestamp !== 'number' ||
    !isObject(sender) ||
    !str(sender.id) ||
    !isObject(m) ||
    !str(m.type)
  ) {
    throw new MalformedEventError('a message callback needs message_token, timestamp, sender.id and message.type');
  }
  const media = async (type: AttachmentType, filename: string, mime: string): Promise<Attachment> => {
    const url = str(m.media);
    if (!url || !/^https?:\/\//i.test(url)) throw new MalformedEventError(`${m.type} needs a media URL`);
    return mediaAttachment(kit, integration.accountId, type, {
      url: async () => url,
      filename: str(m.file_name) || filename,
      mime,
      size: typeof m.size === 'number' ? m.size : undefined,
    });
  };

  const lines: string[] = [];
  const attachments: Attachment[] = [];
  const text = str(m.text);
  switch (m.type) {
    case 'text':
      if (text) lines.push(text);
      break;
    case 'picture':
      attachments.push(await media('photo', `picture-${token}.jpg`, 'image/jpeg'));
      if (text) lines.push(text);
      break;
    case 'video':
      attachments.push(await media('video', `video-${token}.mp4`, 'video/mp4'));
      if (text) lines.push(text);
      break;
    case 'file':
      attachments.push(await media('doc', `file-${token}`, ''));
      break;
    case 'sticker':
      attachments.push(
        str(m.media)
          ? await media('sticker', `sticker-${m.sticker_id ?? token}.png`, 'image/png')
          : { type: 'sticker', url: '', text: `sticker ${m.sticker_id ?? ''}`.trim() },
      );
      break;
    case 'location': {
      const loc = m.location;
      if (!isObject(loc) || typeof loc.lat !== 'number' || typeof loc.lon !== 'number')
        throw new MalformedEventError('location needs lat and lon');
      attachments.push({ type: 'link', url: mapUrl(loc.lat, loc.lon), text: str(loc.address) || 'Location' });
      break;
    }
    case 'contact': {
      const c = isObject(m.contact) ? m.contact : {};
      lines.push(`Contact: ${[str(c.name), str(c.phone_number)].filter(Boolean).join(', ')}`);
      break;
    }
    case 'url':
      if (str(m.media)) attachments.push({ type: 'link', url: m.media, text: text ?? '' });
      break;
    default:
      return { kind: 'ignored', event: 'message', reason: `message type ${m.type}` };
  }
  if (!lines.length && !attachments.length) return { kind: 'ignored', event: 'message', reason: 'message without content' };

  const socialId = sender.id as string;
  return {
    kind: 'message',
    incoming: {
      externalId: token,
      datetime: event.timestamp,
      sender: { socialId, name: str(sender.name) ?? '', ...(str(sender.avatar) ? { avatar: sender.avatar } : {}) },
      channel: { externalId: socialId, type: 'message' },
      text: lines.join('\n'),
      attachments,
    },
  };
}
