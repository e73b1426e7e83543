import type { Attachment, IncomingMessage } from '../../domain/channels/channel.js';
import { mediaAttachment, type BotKit } from '../bots/bot-kit.js';
import { isInt, isObject, str } from '../social/social-kit.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * OK group chat notifications (webhook bodies and long-polling updates have the same shape,
 * https://apiok.ru/en/dev/graph_api/methods/graph.user/graph.user.subscribe/post):
 * `{webhookType, sender: {user_id: "user:<id>", name}, recipient: {chat_id: "chat:<id>"},
 * message: {mid, text, attachments: [{type, payload: {url, ...}}]}, timestamp}`. Only
 * `MESSAGE_CREATED` carries customers' messages; other types are acknowledged and ignored.
 */

export class MalformedOkEvent extends Error {}

export type OkNormalized = { kind: 'incoming'; incoming: IncomingMessage } | { kind: 'ignored'; reason: string };

/** OK writes ids with their kind (`user:5727…`, `chat:C3ec…`); Parley keeps the id after it. */
export const bareId = (value: string, kind: string) => (value.startsWith(`${kind}:`) ? value.slice(kind.length + 1) : value);

export async function normalizeOkEvent(kit: BotKit, accountId: number, event: ProviderJson): Promise<OkNormalized> {
  if (event.webhookType !== 'MESSAGE_CREATED') return { kind: 'ignored', reason: `notification ${String(event.webhookType)}` };
  const { sender, recipient, message: m } = event;
  if (
    !isObject(sender) ||
    !str(sender.user_id) ||
    !isObject(recipient) ||
    !str(recipient.chat_id) ||
    !isObject(m) ||
    !str(m.mid) ||
    !isInt(event.timestamp)
  ) {
    throw new MalformedOkEvent('MESSAGE_CREATED needs sender.user_id, recipient.chat_id, message.mid and timestamp');
  }
  const attachments = await okAttachments(kit, accountId, m.mid, m.attachments ?? (m.attachment ? [m.attachment] : []));
  const text = str(m.text) ?? '';
  if (!text && !attachments.length) return { kind: 'ignored', reason: 'message without content' };
  const socialId = bareId(sender.user_id, 'user');
  return {
    kind: 'incoming',
    incoming: {
      externalId: m.mid,
      datetime: event.timestamp,
      sender: { socialId, name: str(sender.name) ?? '', profileUrl: /^\d+$/.test(socialId) ? `https://ok.ru/profile/${socialId}` : '' },
      channel: { externalId: bareId(recipient.chat_id, 'chat'), type: 'message' },
      text,
      attachments,
    },
  };
}

const KINDS: Record<string, { type: Attachment['type']; download: boolean; ext: string; mime: string }> = {
  IMAGE: { type: 'photo', download: true, ext: 'jpg', mime: 'image/jpeg' },
  FILE: { type: 'doc', download: true, ext: 'bin', mime: '' },
  AUDIO: { type: 'audio', download: true, ext: 'mp3', mime: '' },
  STICKER: { type: 'sticker', download: true, ext: 'png', mime: 'image/png' },
  VIDEO: { type: 'video', download: false, ext: 'mp4', mime: '' },
  MUSIC: { type: 'audio', download: false, ext: 'mp3', mime: '' },
  SHARE: { type: 'link', download: false, ext: '', mime: '' },
};

async function okAttachments(kit: BotKit, accountId: number, mid: string, list: unknown): Promise<Attachment[]> {
  if (!Array.isArray(list)) throw new MalformedOkEvent('message.attachments must be a list');
  const out: Attachment[] = [];
  for (const [i, a] of list.entries()) {
    const kind = isObject(a) && typeof a.type === 'string' ? KINDS[a.type] : undefined;
    const payload = isObject(a) && isObject(a.payload) ? a.payload : {};
    const url = str(payload.url);
    if (!kind || !url || !/^https?:\/\//i.test(url)) continue;
    const name = str(payload.name) ?? str(payload.title) ?? `${kind.type}-${mid.slice(-12)}-${i}.${kind.ext}`;
    out.push(
      kind.download
        ? await mediaAttachment(kit, accountId, kind.type, { url: async () => url, filename: name, mime: kind.mime })
        : { type: kind.type, url, text: str(payload.title) ?? '' },
    );
  }
  return out;
}
