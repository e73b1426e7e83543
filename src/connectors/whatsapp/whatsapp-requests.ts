import type { WAMessage, WASocket } from 'baileys';
import type { Json, RequestResult } from '../bridge-client.js';
import { chatIdOf, jidOf, keyOf, mediaContent, messageId, profileOf } from './whatsapp-mapping.js';

/** The part of Baileys' socket the requests use. */
export type WaRequestSocket = Pick<WASocket, 'onWhatsApp' | 'sendMessage' | 'profilePictureUrl'>;

/** Ids of messages this connector sent, so their own upsert is not reported back (bounded). */
const OWN_SENDS = 5000;
/** Recent messages kept to quote them with their content in a reply (bounded). */
const RECENT = 2000;

/**
 * Parley's requests (`send`, `check`, `profile`) served with Baileys' socket: phones in
 * international format become jids, a phone not on WhatsApp is refused before anything is sent,
 * files are downloaded from Parley's file URL, a reply quotes the message by its key.
 */
export class WhatsAppRequests {
  /** Push names seen on messages and contacts: WhatsApp has no query for another user's name. */
  readonly pushNames = new Map<string, string>();
  readonly ownSends = new Set<string>();
  private readonly recent = new Map<string, WAMessage>();
  private readonly onWhatsApp = new Map<string, { exists: boolean; jid: string }>();

  constructor(
    private readonly parleyUrl: string,
    private readonly normalizeJid: (jid: string) => string,
  ) {}

  async serve(s: WaRequestSocket, request: Json): Promise<RequestResult> {
    if (request.type === 'check') {
      const jid = jidOf(String(request.contact));
      if (!jid) return { ok: true, exists: false };
      const found = await this.exists(s, jid);
      return found.exists ? { ok: true, exists: true, contactId: chatIdOf(found.jid) } : { ok: true, exists: false };
    }
    if (request.type === 'profile') {
      const jid = jidOf(String(request.socialId));
      if (!jid) return { ok: true, profile: {} };
      const picture = await s.profilePictureUrl(jid, 'image').catch(() => undefined);
      return { ok: true, profile: profileOf(chatIdOf(jid), this.pushNames.get(jid), picture) };
    }
    if (request.type !== 'send') return { ok: false, refused: `unknown request ${String(request.type)}` };
    const jid = jidOf(String(request.chatId));
    if (!jid) return { ok: false, refused: 'The chat is not a phone number in international format or a WhatsApp id' };
    if (!(await this.exists(s, jid)).exists) return { ok: false, refused: 'This phone number is not on WhatsApp' };
    const key = typeof request.replyTo === 'string' ? keyOf(request.replyTo) : null;
    // Baileys quotes from a message object: the key is what WhatsApp needs, the content is what the
    // quote shows; a message older than this run's memory is quoted by its key alone.
    const known = key ? this.recent.get(key.id) : undefined;
    const quoted = known?.key.remoteJid === key?.remoteJid ? known : undefined;
    const options = key && key.remoteJid === jid ? { quoted: quoted ?? ({ key, message: { conversation: '' } } as WAMessage) } : {};
    const text = typeof request.text === 'string' ? request.text : '';
    const attachment = request.attachment as { type: string; url: string; name?: string; mime?: string } | undefined;
    const ids: string[] = [];
    const sent = async (content: Json) => {
      const message = await s.sendMessage(jid, content as never, options);
      if (!message?.key.id) throw new Error('WhatsApp gave no message id');
      this.ownSends.add(message.key.id);
      this.remember(message);
      if (this.ownSends.size > OWN_SENDS) this.ownSends.delete(this.ownSends.values().next().value as string);
      ids.push(messageId(jid, true, message.key.id));
    };
    if (attachment) {
      const href = new URL(attachment.url, this.parleyUrl.replace(/^ws/, 'http')).toString();
      const res = await fetch(href);
      if (!res.ok) return { ok: false, retryable: `could not download the file: HTTP ${res.status}` };
      const bytes = new Uint8Array(await res.arrayBuffer());
      const captioned = attachment.type !== 'audio' && attachment.type !== 'sticker';
      // Voice notes and stickers carry no caption: the text goes first as a message of its own, as
      // the protocol orders a send's ids (docs/channels/bridge.md "Messages").
      if (!captioned && text) await sent({ text });
      const mime = attachment.mime ?? res.headers.get('content-type')?.split(';')[0] ?? undefined;
      await sent(
        mediaContent(attachment.type, bytes, {
          ...(mime ? { mime } : {}),
          ...(attachment.name ? { name: attachment.name } : {}),
          ...(captioned && text ? { caption: text } : {}),
        }),
      );
    } else {
      await sent({ text });
    }
    return { ok: true, externalIds: ids };
  }

  /** A message seen (received or sent), so that a reply to it quotes its content. */
  remember(message: WAMessage): void {
    if (!message.key.id || !message.message) return;
    this.recent.set(message.key.id, message);
    if (this.recent.size > RECENT) this.recent.delete(this.recent.keys().next().value as string);
  }

  /** Whether a jid can be written to: private (@lid) ids are WhatsApp's own; phones are asked once per run. */
  private async exists(s: WaRequestSocket, jid: string): Promise<{ exists: boolean; jid: string }> {
    if (jid.endsWith('@lid')) return { exists: true, jid };
    const known = this.onWhatsApp.get(jid);
    if (known) return known;
    const [found] = (await s.onWhatsApp(jid)) ?? [];
    const answer = found?.exists ? { exists: true, jid: found.jid ? this.normalizeJid(found.jid) : jid } : { exists: false, jid };
    this.onWhatsApp.set(jid, answer);
    return answer;
  }
}
