import type { FakeMetaGraph, GraphRoute } from './fake-meta-graph.js';
import type { FakeMetaPages } from './fake-meta-pages.js';

/**
 * Page comments and Instagram comments on the fake Graph server, following Meta's documented
 * shapes: posts (`GET /{post-id}?fields=message,full_picture,permalink_url,from`) and media
 * (`GET /{media-id}?fields=caption,media_type,media_url,thumbnail_url,permalink,username`) read with
 * their account's token; public replies (`POST /{comment-id}/comments` on Facebook,
 * `POST /{comment-id}/replies` on Instagram, `POST /{object-id}/comments` on the post or media);
 * private replies through the Send API (`recipient: {comment_id}`): one per comment, within 7
 * days of it, answered with the author's page- or Instagram-scoped id as `recipient_id`.
 * Webhook payloads for the `feed` and `comments` fields are built by {@link feedWebhook} and
 * {@link instagramCommentWebhook}.
 */
export interface FakeObject {
  id: string;
  /** The page or Instagram account owning it. */
  ownerId: string;
  fields: Record<string, unknown>;
}

export interface FakeComment {
  id: string;
  ownerId: string;
  /** The author's id in the comment webhook. */
  authorId: string;
  /** The author's id in direct messages (what a private reply answers as recipient_id). */
  dmId: string;
  at: number;
}

const DAY = 24 * 60 * 60 * 1000;

export class FakeMetaComments {
  readonly objects = new Map<string, FakeObject>();
  readonly comments = new Map<string, FakeComment>();
  readonly replies: Array<{ path: string; body: Record<string, any> }> = [];
  readonly privateReplies: Array<{ commentId: string; body: Record<string, any>; mid: string }> = [];
  private seq = 0;

  constructor(
    graph: FakeMetaGraph,
    private readonly pages: FakeMetaPages,
    private readonly now: () => number,
  ) {
    // Tried before the Messenger/Instagram routes, which answer every other call of a page token.
    graph.products.unshift((route) => this.handle(route));
  }

  addObject(object: FakeObject): void {
    this.objects.set(object.id, object);
  }

  addComment(comment: FakeComment): void {
    this.comments.set(comment.id, comment);
  }

  private owner(r: GraphRoute) {
    return [...this.pages.pages.values()].find((p) => p.token === r.token);
  }

  private handle(r: GraphRoute): boolean {
    const account = this.owner(r);
    if (!account) return false;
    const [first, edge] = r.path.split('/');
    const object = this.objects.get(first!);
    const comment = this.comments.get(first!);
    if (r.method === 'GET' && !edge && object) {
      if (object.ownerId !== account.id) r.fail(400, 10, '(#10) Requires pages_read_engagement permission to manage the object');
      else r.json(200, { id: object.id, ...object.fields });
      return true;
    }
    if (r.method === 'POST' && (edge === 'comments' || edge === 'replies') && (object || comment)) {
      if ((object ?? comment)?.ownerId !== account.id) {
        r.fail(400, 200, '(#200) Permissions error');
        return true;
      }
      if (typeof r.body.message !== 'string' && typeof r.body.attachment_url !== 'string') {
        r.fail(400, 100, '(#100) message is required');
        return true;
      }
      const id = account.kind === 'page' ? `${first!.split('_')[0]}_${880_000 + ++this.seq}` : String(17_900_000_000 + ++this.seq);
      this.replies.push({ path: r.path, body: r.body });
      r.json(200, { id });
      return true;
    }
    if (r.method === 'POST' && edge === 'messages' && first === account.id && r.body.recipient?.comment_id !== undefined) {
      const target = this.comments.get(String(r.body.recipient.comment_id));
      if (!target || target.ownerId !== account.id) {
        r.fail(400, 100, '(#100) No matching comment');
        return true;
      }
      if (this.now() - target.at > 7 * DAY) {
        r.fail(400, 10, '(#10) This message is sent outside of allowed window.', { error_subcode: 2018278 });
        return true;
      }
      if (this.privateReplies.some((p) => p.commentId === target.id)) {
        r.fail(400, 10, '(#10) Only one private reply can be sent per comment', { error_subcode: 2018278 });
        return true;
      }
      const mid = `m_private${++this.seq}`;
      this.privateReplies.push({ commentId: target.id, body: r.body, mid });
      r.json(200, { recipient_id: target.dmId, message_id: mid });
      return true;
    }
    return false;
  }
}

/** A Page webhook with one `feed` change (https://developers.facebook.com/docs/graph-api/webhooks/reference/page/#feed). */
export function feedWebhook(pageId: string, value: Record<string, unknown>, time = Date.now()): Record<string, unknown> {
  return { object: 'page', entry: [{ id: pageId, time, changes: [{ field: 'feed', value }] }] };
}

/** An Instagram webhook with one `comments` (or `live_comments`) change. */
export function instagramCommentWebhook(
  igId: string,
  value: Record<string, unknown>,
  time: number,
  field = 'comments',
): Record<string, unknown> {
  return { object: 'instagram', entry: [{ id: igId, time, changes: [{ field, value }] }] };
}
