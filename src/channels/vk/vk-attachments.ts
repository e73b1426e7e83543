import type { Attachment } from '../../domain/channels/channel.js';
import { mediaAttachment, type BotKit } from '../bots/bot-kit.js';
import { isInt, isObject, str } from '../social/social-kit.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * VK message and comment attachments (https://dev.vk.com/en/reference/objects/attachments-message)
 * as History attachments. Files VK hands out (photos, documents, voice messages, stickers) are
 * copied into Parley's storage; what VK does not let a community token download (videos, music)
 * and what is a link by nature (links, wall posts, goods) become links to vk.com.
 */

const VK = 'https://vk.com';

/** The largest of VK's photo sizes (`sizes[]` with width/height, or lettered types). */
export function largestPhoto(photo: ProviderJson): string | undefined {
  const sizes = Array.isArray(photo.sizes) ? photo.sizes.filter((s: unknown) => isObject(s) && typeof s.url === 'string') : [];
  if (!sizes.length) return str(photo.photo_604) ?? str(photo.photo_130) ?? str(photo.url);
  const area = (s: { width?: number; height?: number }) => (s.width ?? 0) * (s.height ?? 0);
  return sizes.reduce((best: ProviderJson, s: ProviderJson) => (area(s) >= area(best) ? s : best)).url;
}

/** The last (largest) image of a list VK gives as `[{url, width, height}]`. */
const lastImage = (list: unknown): string | undefined => (Array.isArray(list) ? str(list.filter(isObject).at(-1)?.url) : undefined);

export async function vkAttachments(kit: BotKit, accountId: number, list: unknown): Promise<Attachment[]> {
  if (!Array.isArray(list)) return [];
  const out: Attachment[] = [];
  for (const item of list) {
    if (!isObject(item) || typeof item.type !== 'string' || !isObject(item[item.type])) continue;
    const a = item[item.type] as ProviderJson;
    const ref = `${a.owner_id ?? a.from_id ?? ''}_${a.id ?? ''}`;
    const download = (type: Attachment['type'], url: string | undefined, filename: string, mime: string, size?: number) =>
      url && /^https?:\/\//i.test(url)
        ? mediaAttachment(kit, accountId, type, { url: async () => url, filename, mime, size })
        : Promise.resolve<Attachment>({ type, url: '', text: filename });
    switch (item.type) {
      case 'photo':
        out.push(await download('photo', largestPhoto(a), `photo${ref}.jpg`, 'image/jpeg'));
        break;
      case 'doc':
        out.push(
          await download('doc', str(a.url), str(a.title) || `doc${ref}${a.ext ? `.${a.ext}` : ''}`, '', isInt(a.size) ? a.size : undefined),
        );
        break;
      case 'audio_message':
        out.push(
          await download(
            'audio',
            str(a.link_ogg) ?? str(a.link_mp3),
            `voice${ref}.${a.link_ogg ? 'ogg' : 'mp3'}`,
            a.link_ogg ? 'audio/ogg' : 'audio/mpeg',
          ),
        );
        break;
      case 'sticker':
        out.push(
          await download(
            'sticker',
            lastImage(a.images) ?? lastImage(a.images_with_background),
            `sticker-${a.sticker_id ?? 'vk'}.png`,
            'image/png',
          ),
        );
        break;
      case 'video':
        out.push({
          type: 'video',
          url: `${VK}/video${ref}`,
          text: str(a.title) ?? '',
          ...(lastImage(a.image) ? { preview: lastImage(a.image) } : {}),
        });
        break;
      case 'audio':
        out.push({ type: 'audio', url: `${VK}/audio${ref}`, text: [str(a.artist), str(a.title)].filter(Boolean).join(' - ') });
        break;
      case 'link':
        if (str(a.url)) out.push({ type: 'link', url: a.url, text: str(a.title) ?? '' });
        break;
      case 'wall':
        out.push({ type: 'link', url: `${VK}/wall${a.owner_id ?? a.to_id ?? a.from_id}_${a.id}`, text: (str(a.text) ?? '').slice(0, 200) });
        break;
      case 'market':
        out.push({ type: 'market', url: `${VK}/product${ref}`, text: str(a.title) ?? '' });
        break;
      default:
        break;
    }
  }
  return out;
}
