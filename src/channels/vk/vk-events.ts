import type { Attachment, IncomingMessage, SenderProfile } from '../../domain/channels/channel.js';
import type { SourceType } from '../../domain/channels/integration-types.js';
import type { BotKit } from '../bots/bot-kit.js';
import { isInt, isObject, ProviderRefusal, str } from '../social/social-kit.js';
import type { VkApi } from './vk-api.js';
import { largestPhoto, vkAttachments } from './vk-attachments.js';
import type { ProviderJson } from '../provider-json.js';

/**
 * VK community events (Callback API and Bots Long Poll deliver the same objects,
 * https://dev.vk.com/en/api/community-events/json-schema) as what Parley stores:
 * `message_new` an incoming message, `message_reply` an outgoing one written in VK's own interface,
 * `message_edit` a change of a stored message, and the four comment events incoming comments on
 * channels of type comment/photo/video/market with the commented object as `preview`.
 */

export class MalformedVkEvent extends Error {}

export interface OutgoingFromVk {
  socialId: string;
  channelExternalId: string;
  externalId: string;
  text: string;
  attachments: Attachment[];
  at: number;
}

export type VkNormalized =
  | { kind: 'incoming'; incoming: IncomingMessage }
  | { kind: 'outgoing'; outgoing: OutgoingFromVk }
  | { kind: 'edit'; externalId: string; text: string; attachments: Attachment[] }
  | { kind: 'ignored'; reason: string };

export interface VkEventContext {
  kit: BotKit;
  api: VkApi;
  integration: { accountId: number; login: string; groupId: number };
  /** Whether Parley lacks this customer's profile (name, photo): then `users.get` is asked. */
  needProfile(socialId: string): Promise<boolean>;
}

/** Comment events: which object they are about, and the channel type they feed. */
const COMMENT_EVENTS = {
  wall_reply_new: { prefix: 'wall', source: 'comment', owner: 'post_owner_id', item: 'post_id' },
  photo_comment_new: { prefix: 'photo', source: 'photo', owner: 'photo_owner_id', item: 'photo_id' },
  video_comment_new: { prefix: 'video', source: 'video', owner: 'video_owner_id', item: 'video_id' },
  market_comment_new: { prefix: 'market', source: 'market', owner: 'market_owner_id', item: 'item_id' },
} as const satisfies Record<string, { prefix: string; source: SourceType; owner: string; item: string }>;

export const VK_EVENT_TYPES = ['message_new', 'message_reply', 'message_edit', ...Object.keys(COMMENT_EVENTS)] as const;

/** A comment's id in Parley: VK's own link notation, `wall-1_2?reply=3`. */
export const commentId = (target: string, id: number | string) => `${target}?reply=${id}`;

/** The commented object and comment of a stored comment id or channel id; undefined when it is none. */
export function parseCommentRef(
  value: string | undefined,
): { prefix: 'wall' | 'photo' | 'video' | 'market'; owner: number; item: number; reply?: number } | undefined {
  const m = value ? /^(wall|photo|video|market)(-?\d+)_(\d+)(?:\?reply=(\d+)|:-?\d+)?$/.exec(value) : null;
  if (!m) return undefined;
  return { prefix: m[1] as 'wall', owner: Number(m[2]), item: Number(m[3]), ...(m[4] ? { reply: Number(m[4]) } : {}) };
}

export async function normalizeVkEvent(ctx: VkEventContext, type: string, object: unknown): Promise<VkNormalized> {
  if (!isObject(object)) throw new MalformedVkEvent(`${type} needs an object`);
  if (type === 'message_new') return incomingMessage(ctx, isObject(object.message) ? object.message : object);
  if (type === 'message_reply') return outgoingMessage(ctx, object);
  if (type === 'message_edit') {
    const m = checkMessage(object);
    return {
      kind: 'edit',
      externalId: messageId(m),
      text: messageText(m),
      attachments: await vkAttachments(ctx.kit, ctx.integration.accountId, m.attachments),
    };
  }
  if (type in COMMENT_EVENTS) return comment(ctx, COMMENT_EVENTS[type as keyof typeof COMMENT_EVENTS], object);
  return { kind: 'ignored', reason: `event ${type}` };
}

function checkMessage(m: ProviderJson): ProviderJson {
  if (!isInt(m.id) || !isInt(m.date) || !isInt(m.peer_id) || !isInt(m.from_id))
    throw new MalformedVkEvent('a message needs id, date, peer_id and from_id');
  return m;
}

/** Community messages have a community-wide `id`; in group chats it is 0 and the chat's own number tells. */
const messageId = (m: ProviderJson) => (m.id > 0 ? String(m.id) : `${m.peer_id}_${m.conversation_message_id ?? 0}`);

/** The text with forwarded messages quoted under it. */
function messageText(m: ProviderJson): string {
  const lines = [str(m.text) ?? ''];
  if (Array.isArray(m.fwd_messages)) {
    for (const f of m.fwd_messages.filter(isObject)) if (str(f.text)) lines.push(`> ${f.text}`);
  }
  return lines.filter(Boolean).join('\n');
}

async function incomingMessage(ctx: VkEventContext, object: ProviderJson): Promise<VkNormalized> {
  const m = checkMessage(object);
  const socialId = String(m.from_id);
  const attachments = await vkAttachments(ctx.kit, ctx.integration.accountId, m.attachments);
  const text = messageText(m);
  if (!text && !attachments.length) return { kind: 'ignored', reason: 'message without supported content' };
  const quoted = isObject(m.reply_message) ? m.reply_message : Array.isArray(m.fwd_messages) ? m.fwd_messages.find(isObject) : undefined;
  const replyTo = quoted && isInt(quoted.id) && quoted.id > 0 ? String(quoted.id) : undefined;
  return {
    kind: 'incoming',
    incoming: {
      externalId: messageId(m),
      datetime: m.date * 1000,
      sender: await sender(ctx, socialId),
      channel: { externalId: String(m.peer_id), type: 'message' },
      text,
      attachments,
      ...(replyTo ? { replyToExternalId: replyTo } : {}),
    },
  };
}

async function outgoingMessage(ctx: VkEventContext, object: ProviderJson): Promise<VkNormalized> {
  const m = checkMessage(object);
  // Parley's own sends (and other apps') come back too: they have no admin author. Parley stored its
  // own when VK accepted them; only what an administrator wrote in VK's interface is new here.
  if (!isInt(m.admin_author_id)) return { kind: 'ignored', reason: 'message sent through the API' };
  return {
    kind: 'outgoing',
    outgoing: {
      socialId: String(m.peer_id),
      channelExternalId: String(m.peer_id),
      externalId: messageId(m),
      text: messageText(m),
      attachments: await vkAttachments(ctx.kit, ctx.integration.accountId, m.attachments),
      at: m.date * 1000,
    },
  };
}

async function comment(
  ctx: VkEventContext,
  kind: (typeof COMMENT_EVENTS)[keyof typeof COMMENT_EVENTS],
  c: ProviderJson,
): Promise<VkNormalized> {
  const owner = c[kind.owner];
  const item = c[kind.item];
  if (!isInt(c.id) || !isInt(c.from_id) || !isInt(c.date) || !isInt(owner) || !isInt(item)) {
    throw new MalformedVkEvent(`a comment needs id, from_id, date, ${kind.owner} and ${kind.item}`);
  }
  if (c.from_id === -ctx.integration.groupId) return { kind: 'ignored', reason: "the community's own comment" };
  const target = `${kind.prefix}${owner}_${item}`;
  const socialId = String(c.from_id);
  const attachments = await vkAttachments(ctx.kit, ctx.integration.accountId, c.attachments);
  const text = str(c.text) ?? '';
  if (!text && !attachments.length) return { kind: 'ignored', reason: 'comment without content' };
  const preview = await previewOf(ctx, kind.prefix, owner, item);
  const reply = isInt(c.reply_to_comment) && c.reply_to_comment > 0 ? commentId(target, c.reply_to_comment) : undefined;
  return {
    kind: 'incoming',
    incoming: {
      externalId: commentId(target, c.id),
      datetime: c.date * 1000,
      sender: await sender(ctx, socialId),
      // One channel per commented object and customer (a channel belongs to one customer).
      channel: { externalId: `${target}:${socialId}`, type: kind.source, name: (preview.description || target).slice(0, 100) },
      text,
      url: kind.prefix === 'wall' ? `https://vk.com/${commentId(target, c.id)}` : preview.url,
      attachments,
      preview,
      ...(reply ? { replyToExternalId: reply } : {}),
    },
  };
}

const OBJECT_URL = {
  wall: (o: number, i: number) => `https://vk.com/wall${o}_${i}`,
  photo: (o: number, i: number) => `https://vk.com/photo${o}_${i}`,
  video: (o: number, i: number) => `https://vk.com/video${o}_${i}`,
  market: (o: number, i: number) => `https://vk.com/product${o}_${i}`,
};

/**
 * The commented object as `preview`: its link and owner always; its text and picture when VK lets
 * the community token read it (a refusal leaves them empty, the comment is stored anyway).
 */
async function previewOf(ctx: VkEventContext, prefix: keyof typeof OBJECT_URL, owner: number, item: number) {
  const preview = {
    photo: '',
    description: '',
    owner: owner === -ctx.integration.groupId && ctx.integration.login ? ctx.integration.login : String(owner),
    url: OBJECT_URL[prefix](owner, item),
  };
  const ref = `${owner}_${item}`;
  const first = (answer: unknown): ProviderJson | undefined => {
    const list = Array.isArray(answer) ? answer : isObject(answer) && Array.isArray(answer.items) ? answer.items : [];
    return list.find(isObject);
  };
  try {
    if (prefix === 'wall') {
      const post = first(await ctx.api.call('wall.getById', { posts: ref }));
      const photo = Array.isArray(post?.attachments)
        ? post.attachments.find((a: unknown) => isObject(a) && a.type === 'photo')?.photo
        : undefined;
      preview.description = str(post?.text) ?? '';
      preview.photo = (isObject(photo) && largestPhoto(photo)) || '';
    } else if (prefix === 'photo') {
      const photo = first(await ctx.api.call('photos.getById', { photos: ref }));
      preview.description = str(photo?.text) ?? '';
      preview.photo = (photo && largestPhoto(photo)) || '';
    } else if (prefix === 'video') {
      const video = first(await ctx.api.call('video.get', { videos: ref }));
      preview.description = str(video?.title) ?? '';
      preview.photo = (Array.isArray(video?.image) && str(video.image.at(-1)?.url)) || '';
    } else {
      const good = first(await ctx.api.call('market.getById', { item_ids: ref }));
      preview.description = str(good?.title) ?? '';
      preview.photo = str(good?.thumb_photo) ?? '';
    }
  } catch (err) {
    if (!(err instanceof ProviderRefusal)) throw err;
    ctx.kit.log.debug({ reason: err.message, object: `${prefix}${ref}` }, 'VK object not readable for its preview');
  }
  preview.description = preview.description.slice(0, 300);
  return preview;
}

/** The customer: id always; name, screen name, photo and page from `users.get` when Parley lacks them. */
async function sender(ctx: VkEventContext, socialId: string): Promise<SenderProfile> {
  const id = Number(socialId);
  if (id <= 0) return { socialId, name: `club${-id}`, login: `club${-id}`, profileUrl: `https://vk.com/club${-id}` };
  if (!(await ctx.needProfile(socialId))) return { socialId };
  const profile = await fetchVkProfile(ctx.api, socialId).catch((err: unknown) => {
    if (!(err instanceof ProviderRefusal)) throw err;
    ctx.kit.log.warn({ reason: err.message, socialId }, 'VK user profile not read');
    return undefined;
  });
  return { socialId, ...(profile ?? {}) };
}

export async function fetchVkProfile(api: VkApi, socialId: string): Promise<Omit<SenderProfile, 'socialId'> | undefined> {
  const users = await api.call<unknown[]>('users.get', { user_ids: socialId, fields: 'photo_200,screen_name' });
  const user = Array.isArray(users) ? users.find(isObject) : undefined;
  if (!user) return undefined;
  const login = str(user.screen_name) || `id${socialId}`;
  return {
    name: [str(user.first_name), str(user.last_name)].filter(Boolean).join(' ') || login,
    login,
    avatar: str(user.photo_200) ?? '',
    profileUrl: `https://vk.com/${login}`,
  };
}
