/**
 * What the Meta comment channels (`social1_group` Page comments, `photonetVOff` Instagram
 * comments) share: their channel ids and the private-reply rules.
 */
import type { PrivateReplies } from '../../domain/channels/channel.js';
import type { MetaMessagingAdapter } from './meta-messaging.js';

/** Meta allows a private reply within 7 days of the comment. */
export const PRIVATE_REPLY_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/** Private replies to comments go through the direct-message adapter of the same account, and land in its lead. */
export function privateRepliesThrough(dm: MetaMessagingAdapter): PrivateReplies {
  return {
    dmType: dm.type,
    windowMs: PRIVATE_REPLY_WINDOW_MS,
    send: (dmIntegration, commentId, text) => dm.sendPrivateReply(dmIntegration, commentId, text),
  };
}

/**
 * A comment channel's id: the commented post or media and the commenter, `<objectId>:<authorId>`
 * (a channel belongs to one customer, as VK's comment channels do).
 */
export const commentChannelId = (objectId: string, authorId: string) => `${objectId}:${authorId}`;

/** The post or media id of a comment channel's id; undefined when it is none. */
export function commentObject(channelId: string): string | undefined {
  const m = /^(\d{1,40}(?:_\d{1,40})?):\d{1,40}$/.exec(channelId);
  return m ? m[1] : undefined;
}
