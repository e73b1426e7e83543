import type { ChannelIntegration, OutgoingMessage, PrivateReplies, SendResult } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { GraphError } from '../meta/graph-api.js';
import { COMMENT_ID } from '../meta/meta-messaging.js';
import type { CommentTarget } from '../meta/meta-comments-inbound.js';
import { commentObject, privateRepliesThrough } from '../meta/meta-comments.js';
import { InstagramAdapter } from './instagram-adapter.js';

/** Instagram caps a comment at 2,200 characters. */
const COMMENT_LIMIT = 2200;

/**
 * `photonetVOff`: comments on an Instagram professional account's media (the `comments` and
 * `live_comments` webhook fields), through the Instagram API with Instagram Login like
 * `photonetV3` (same credentials, check and subscription). A channel is one media and one
 * commenter, of type `video` for videos and reels, else `photo`. Answering is a public reply
 * (`POST /{comment-id}/replies`), or a comment on the media when there is no comment to answer;
 * private replies go through the `photonetV3` integration of the same account. See
 * docs/channels/instagram.md.
 */
export class InstagramCommentsAdapter extends InstagramAdapter {
  override readonly type: string = 'photonetVOff';
  readonly privateReplies: PrivateReplies;

  constructor(kit: BotKit, dm: InstagramAdapter) {
    super(kit);
    this.privateReplies = privateRepliesThrough(dm);
  }

  override async send(
    integration: ChannelIntegration,
    channel: { externalId: string; type: string },
    message: OutgoingMessage,
  ): Promise<SendResult> {
    this.requireConnected(integration);
    const mediaId = commentObject(channel.externalId);
    if (channel.type === 'message' || !mediaId)
      throw new ChannelRejectedError('An Instagram comments integration answers on comment channels only');
    if (message.attachment) throw new ChannelRejectedError('Replies to Instagram comments carry text only');
    const text = message.text ?? '';
    if (!text) throw new ChannelRejectedError('A reply to an Instagram comment needs text');
    if (text.length > COMMENT_LIMIT) throw new ChannelRejectedError(`An Instagram comment holds at most ${COMMENT_LIMIT} characters`);
    const quoted = message.replyToExternalId;
    const path = quoted && COMMENT_ID.test(quoted) ? `${quoted}/replies` : `${mediaId}/comments`;
    const answer = await this.guard(integration, () => this.api(integration).post<{ id?: string }>(path, { message: text }));
    if (!answer.id) throw new ChannelRejectedError('Instagram answered the reply without an id');
    return { externalIds: [String(answer.id)] };
  }

  /**
   * The media as a comment's `preview`, read with the account's token: its picture (a video's
   * thumbnail), caption, owner and permalink; its type picks the channel type. Media Instagram will
   * not show leave the preview empty, typed by the webhook's `media_product_type`.
   */
  async commentTarget(integration: ChannelIntegration, mediaId: string, productType?: string): Promise<CommentTarget> {
    const preview = { photo: '', description: '', owner: integration.login, url: '' };
    let video = productType === 'REELS';
    try {
      const media = await this.guard(integration, () =>
        this.api(integration).get<{
          caption?: string;
          media_type?: string;
          media_url?: string;
          thumbnail_url?: string;
          permalink?: string;
          username?: string;
        }>(mediaId, {
          fields: 'caption,media_type,media_url,thumbnail_url,permalink,username',
        }),
      );
      video = media.media_type === 'VIDEO' || video;
      preview.photo = (video ? media.thumbnail_url : media.media_url) ?? '';
      preview.description = (media.caption ?? '').slice(0, 300);
      if (media.username) preview.owner = media.username;
      if (typeof media.permalink === 'string' && /^https:\/\//i.test(media.permalink)) preview.url = media.permalink;
    } catch (err) {
      if (!(err instanceof ChannelRejectedError || err instanceof GraphError)) throw err;
      this.kit.log.debug({ integrationId: integration.id, mediaId, reason: err.message }, 'Instagram media not readable for its preview');
    }
    return { sourceType: video ? 'video' : 'photo', name: (preview.description || mediaId).slice(0, 100), preview };
  }
}
