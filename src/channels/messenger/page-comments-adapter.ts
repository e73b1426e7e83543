import type { ChannelIntegration, OutgoingMessage, PrivateReplies, SendResult } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { GraphError } from '../meta/graph-api.js';
import { COMMENT_ID } from '../meta/meta-messaging.js';
import type { CommentTarget } from '../meta/meta-comments-inbound.js';
import { commentObject, privateRepliesThrough } from '../meta/meta-comments.js';
import { MessengerAdapter } from './messenger-adapter.js';

/** Facebook caps a comment at 8,000 characters. */
const COMMENT_LIMIT = 8000;

/**
 * `social1_group`: comments on a Facebook Page's posts (the Page webhook's `feed` field). Connects
 * with the same Page credentials as Messenger (`pageAccessToken`, `pageId`, `appSecret`) and the
 * same check and subscription. A channel is one post and one commenter; answering on it is a public
 * reply under the customer's comment (`POST /{comment-id}/comments`), or, without a comment to
 * answer, a comment on the post. Private replies go through the `social1_messenger` integration
 * sharing the Page id (`identifier`). See docs/channels/messenger.md.
 */
export class PageCommentsAdapter extends MessengerAdapter {
  override readonly type: string = 'social1_group';
  readonly privateReplies: PrivateReplies;

  constructor(kit: BotKit, dm: MessengerAdapter) {
    super(kit);
    this.privateReplies = privateRepliesThrough(dm);
  }

  override async send(
    integration: ChannelIntegration,
    channel: { externalId: string; type: string },
    message: OutgoingMessage,
  ): Promise<SendResult> {
    this.requireConnected(integration);
    const postId = commentObject(channel.externalId);
    if (channel.type !== 'comment' || !postId)
      throw new ChannelRejectedError('A Facebook Page integration answers on comment channels only');
    const text = message.text ?? '';
    if (text.length > COMMENT_LIMIT) throw new ChannelRejectedError(`A Facebook comment holds at most ${COMMENT_LIMIT} characters`);
    const body: Record<string, unknown> = text ? { message: text } : {};
    if (message.attachment) {
      // Facebook fetches a comment's picture itself: Parley's public https link.
      const url = typeof message.attachment.media.url === 'string' ? message.attachment.media.url : '';
      if (message.attachment.type !== 'photo' || !/^https:\/\//i.test(url)) {
        throw new ChannelRejectedError('A Facebook comment carries text and at most one picture Facebook can fetch (PARLEY_PUBLIC_URL)');
      }
      body.attachment_url = url;
    }
    const quoted = message.replyToExternalId;
    const target = quoted && COMMENT_ID.test(quoted) ? quoted : postId;
    const answer = await this.guard(integration, () => this.api(integration).post<{ id?: string }>(`${target}/comments`, body));
    if (!answer.id) throw new ChannelRejectedError('Facebook answered the comment without an id');
    return { externalIds: [String(answer.id)] };
  }

  /**
   * The post as a comment's `preview` (docs/api/resources.md), read with the Page token. A post
   * Facebook will not show leaves the preview with its link only; the comment is stored anyway.
   */
  async commentTarget(integration: ChannelIntegration, postId: string): Promise<CommentTarget> {
    const preview = { photo: '', description: '', owner: integration.login, url: `https://www.facebook.com/${postId}` };
    try {
      const post = await this.guard(integration, () =>
        this.api(integration).get<{
          message?: string;
          story?: string;
          full_picture?: string;
          permalink_url?: string;
          from?: { name?: string };
        }>(postId, {
          fields: 'message,story,full_picture,permalink_url,from',
        }),
      );
      preview.description = (post.message || post.story || '').slice(0, 300);
      preview.photo = typeof post.full_picture === 'string' ? post.full_picture : '';
      if (post.from?.name) preview.owner = post.from.name;
      if (typeof post.permalink_url === 'string' && /^https:\/\//i.test(post.permalink_url)) preview.url = post.permalink_url;
    } catch (err) {
      if (!(err instanceof ChannelRejectedError || err instanceof GraphError)) throw err;
      this.kit.log.debug({ integrationId: integration.id, postId, reason: err.message }, 'Facebook post not readable for its preview');
    }
    return { sourceType: 'comment', name: (preview.description || postId).slice(0, 100), preview };
  }
}
