import type { IntegrationRow } from '../../db/schema.js';
import type { IngestService } from '../../domain/conversations/ingest.service.js';
import type { ProviderHistoryService } from '../../domain/conversations/provider-history.service.js';
import type { Attachment, ChannelIntegration, IncomingMessage } from '../../domain/channels/channel.js';
import type { SourceType } from '../../domain/channels/integration-types.js';
import { commentChannelId } from './meta-comments.js';
import { COMMENT_ID, SCOPED_ID } from './meta-messaging.js';
import { MalformedWebhookError, type MetaProduct, type MetaWebhookOutcome, type MetaWebhookPayload } from './meta-webhooks.js';
import type { ProviderJson } from '../provider-json.js';

const isObject = (v: unknown): v is ProviderJson => typeof v === 'object' && v !== null && !Array.isArray(v);
const MAX_TEXT = 64 * 1024;

/** The text a removed comment keeps: Meta removed it, so does Parley (its author's wish). */
export const REMOVED_COMMENT_TEXT = 'This comment was removed by its author or the page.';

/** The commented post or media as Parley shows it: channel type and name, and the `preview`. */
export interface CommentTarget {
  sourceType: SourceType;
  name: string;
  preview: { photo: string; description: string; owner: string; url: string };
}

/** One change of a comment webhook, read and checked. */
export type CommentChange =
  | {
      kind: 'add';
      commentId: string;
      objectId: string;
      author: { id: string; name?: string; login?: string };
      text: string;
      attachments: Attachment[];
      at: number;
      parentId?: string;
      productType?: string;
    }
  | { kind: 'edit'; commentId: string; text: string; attachments: Attachment[] }
  | { kind: 'remove'; commentId: string };

/** A comments product: how its webhook's changes read, and how a commented object is read. */
export interface CommentsAdapter {
  readonly type: string;
  commentTarget(integration: ChannelIntegration, objectId: string, productType?: string): Promise<CommentTarget>;
}

/**
 * Comment webhooks (`changes[]` of `object: page` field `feed`, of `object: instagram` fields
 * `comments` and `live_comments`): a customer's comment is stored as an incoming message on the
 * channel of its post (or media) and author, with the post as `preview`; an edit replaces the
 * stored text, a removal replaces it with {@link REMOVED_COMMENT_TEXT}. The account's own comments
 * (Parley's public replies among them) are left aside, as are other fields and items. The whole
 * payload is checked before anything is stored.
 */
export class MetaCommentsInbound implements MetaProduct {
  readonly types: readonly string[];

  constructor(
    private readonly adapter: CommentsAdapter,
    readonly objects: readonly string[],
    private readonly read: (entry: Record<string, unknown>, change: ProviderJson, ignored: string[]) => CommentChange | undefined,
    private readonly parts: {
      ingest: Pick<IngestService, 'ingest'>;
      history: Pick<ProviderHistoryService, 'applyEdit'>;
      /** Whether the comment is stored already (a redelivery: the post is not read again). */
      knownMessage: (integrationId: number, externalId: string) => Promise<boolean>;
    },
  ) {
    this.types = [adapter.type];
  }

  async handle(row: IntegrationRow, integration: ChannelIntegration, payload: MetaWebhookPayload): Promise<MetaWebhookOutcome> {
    const outcome: MetaWebhookOutcome = { stored: 0, duplicates: 0, statuses: 0, ignored: [] };
    const changes = this.plan(integration, payload, outcome.ignored);
    const targets = new Map<string, Promise<CommentTarget>>();
    for (const change of changes) {
      if (change.kind === 'edit' || change.kind === 'remove') {
        const content =
          change.kind === 'edit' ? { text: change.text, attachments: change.attachments } : { text: REMOVED_COMMENT_TEXT, attachments: [] };
        if (await this.parts.history.applyEdit(row, change.commentId, content)) outcome.stored++;
        else outcome.ignored.push(`${change.kind} of comment ${change.commentId}: not stored here`);
        continue;
      }
      if (await this.parts.knownMessage(row.id, change.commentId)) {
        outcome.duplicates++;
        continue;
      }
      let pending = targets.get(change.objectId);
      if (!pending) {
        pending = this.adapter.commentTarget(integration, change.objectId, change.productType);
        targets.set(change.objectId, pending);
      }
      const target = await pending;
      const incoming: IncomingMessage = {
        externalId: change.commentId,
        datetime: change.at,
        sender: {
          socialId: change.author.id,
          ...(change.author.name ? { name: change.author.name } : {}),
          ...loginOf(row.type, change.author.login),
        },
        channel: { externalId: commentChannelId(change.objectId, change.author.id), type: target.sourceType, name: target.name },
        text: change.text,
        url: row.type === 'social1_group' ? `https://www.facebook.com/${change.commentId}` : target.preview.url,
        attachments: change.attachments,
        preview: target.preview,
        ...(change.parentId ? { replyToExternalId: change.parentId } : {}),
      };
      const result = await this.parts.ingest.ingest(row, incoming);
      if (result.duplicate) outcome.duplicates++;
      else outcome.stored++;
    }
    return outcome;
  }

  check(integration: ChannelIntegration, payload: MetaWebhookPayload): void {
    this.plan(integration, payload, []);
  }

  private plan(integration: ChannelIntegration, payload: MetaWebhookPayload, ignored: string[]): CommentChange[] {
    const out: CommentChange[] = [];
    for (const entry of payload.entry) {
      if (entry.changes !== undefined && !(Array.isArray(entry.changes) && entry.changes.every(isObject))) {
        throw new MalformedWebhookError('entry.changes must be an array of objects');
      }
      if (entry.messaging !== undefined) ignored.push(`messaging of entry ${String(entry.id)}: served by the direct-message integration`);
      if (!entry.changes) continue;
      if (String(entry.id) !== integration.externalId) {
        ignored.push(`entry ${String(entry.id)} is not this integration's account`);
        continue;
      }
      for (const change of entry.changes as Array<ProviderJson>) {
        if (!isObject(change.value) || typeof change.field !== 'string') throw new MalformedWebhookError('a change needs field and value');
        const read = this.read(entry, change, ignored);
        if (!read) continue;
        if (read.kind === 'add' && read.author.id === integration.externalId) {
          // The account's own comments: Parley stored its own replies when Meta accepted them.
          ignored.push(`comment ${read.commentId}: written by the account itself`);
          continue;
        }
        out.push(read);
      }
    }
    return out;
  }
}

const loginOf = (type: string, login: string | undefined) =>
  login ? { login, profileUrl: type === 'photonetVOff' ? `https://www.instagram.com/${login}` : '' } : {};

function text(value: unknown, what: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > MAX_TEXT) throw new MalformedWebhookError(`${what} must be a string`);
  return value;
}

function id(value: unknown, what: string, pattern: RegExp = COMMENT_ID): string {
  const s = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  if (typeof s !== 'string' || !pattern.test(s)) throw new MalformedWebhookError(`${what} must be a Graph id`);
  return s;
}

/** A comment's picture or video as Facebook's feed webhook names it (a link: Meta's CDN links expire). */
function feedAttachments(value: ProviderJson): Attachment[] {
  const out: Attachment[] = [];
  if (typeof value.photo === 'string' && /^https:\/\//i.test(value.photo)) out.push({ type: 'link', url: value.photo, text: 'Photo' });
  if (typeof value.video === 'string' && /^https:\/\//i.test(value.video)) out.push({ type: 'link', url: value.video, text: 'Video' });
  return out;
}

/**
 * A Page `feed` change (https://developers.facebook.com/docs/graph-api/webhooks/reference/page/#feed):
 * `value.item` `comment` with `verb` `add`, `edited` or `remove`, `comment_id`, `post_id`,
 * `parent_id` (the post, or the comment answered), `from {id, name}`, `message`, `created_time`
 * (Unix seconds). Other items (posts, reactions, shares) and verbs (hide) are left aside.
 */
export function readFeedChange(_entry: Record<string, unknown>, change: ProviderJson, ignored: string[]): CommentChange | undefined {
  if (change.field !== 'feed') {
    ignored.push(`field ${String(change.field).slice(0, 40)}`);
    return undefined;
  }
  const v = change.value as ProviderJson;
  if (typeof v.item !== 'string' || typeof v.verb !== 'string') throw new MalformedWebhookError('a feed change needs item and verb');
  if (v.item !== 'comment') {
    ignored.push(`feed item ${v.item.slice(0, 40)}`);
    return undefined;
  }
  const commentId = id(v.comment_id, 'comment_id');
  if (v.verb === 'remove') return { kind: 'remove', commentId };
  if (v.verb === 'edited') return { kind: 'edit', commentId, text: text(v.message, 'message'), attachments: feedAttachments(v) };
  if (v.verb !== 'add') {
    ignored.push(`comment ${commentId}: ${v.verb.slice(0, 40)}`);
    return undefined;
  }
  const postId = id(v.post_id, 'post_id');
  if (!isObject(v.from)) throw new MalformedWebhookError('a comment needs from');
  const author = id(v.from.id, 'from.id', SCOPED_ID);
  if (!Number.isSafeInteger(v.created_time) || v.created_time < 0 || v.created_time > 1e11)
    throw new MalformedWebhookError('created_time must be Unix seconds');
  const body = text(v.message, 'message');
  const attachments = feedAttachments(v);
  const parent = v.parent_id === undefined ? undefined : id(v.parent_id, 'parent_id');
  if (!body && !attachments.length) {
    ignored.push(`comment ${commentId}: nothing to show`);
    return undefined;
  }
  return {
    kind: 'add',
    commentId,
    objectId: postId,
    author: { id: author, ...(typeof v.from.name === 'string' && v.from.name ? { name: v.from.name.slice(0, 255) } : {}) },
    text: body,
    attachments,
    at: v.created_time * 1000,
    ...(parent && parent !== postId ? { parentId: parent } : {}),
  };
}

/**
 * An Instagram `comments` / `live_comments` change
 * (https://developers.facebook.com/docs/instagram-platform/webhooks/examples): `value.id`, `text`,
 * `from {id, username}`, `media {id, media_product_type}`, `parent_id` for a reply. Instagram
 * sends no time with a comment: the entry's `time` (seconds or milliseconds) stands for it.
 */
export function readInstagramCommentChange(
  entry: Record<string, unknown>,
  change: ProviderJson,
  ignored: string[],
): CommentChange | undefined {
  if (change.field !== 'comments' && change.field !== 'live_comments') {
    ignored.push(`field ${String(change.field).slice(0, 40)}`);
    return undefined;
  }
  const v = change.value as ProviderJson;
  const commentId = id(v.id, 'value.id');
  if (!isObject(v.from) || !isObject(v.media)) throw new MalformedWebhookError('a comment needs from and media');
  const author = id(v.from.id, 'from.id', SCOPED_ID);
  const mediaId = id(v.media.id, 'media.id');
  const time = entry.time;
  if (!Number.isSafeInteger(time) || (time as number) < 0) throw new MalformedWebhookError('entry.time must be a Unix time');
  const at = (time as number) < 1e11 ? (time as number) * 1000 : (time as number);
  const body = text(v.text, 'text');
  if (!body) {
    ignored.push(`comment ${commentId}: nothing to show`);
    return undefined;
  }
  const username = typeof v.from.username === 'string' && /^[\w.]{1,64}$/.test(v.from.username) ? v.from.username : undefined;
  const productType = typeof v.media.media_product_type === 'string' ? v.media.media_product_type : undefined;
  const parent = v.parent_id === undefined ? undefined : id(v.parent_id, 'parent_id');
  return {
    kind: 'add',
    commentId,
    objectId: mediaId,
    author: { id: author, ...(username ? { name: username, login: username } : {}) },
    text: body,
    attachments: [],
    at,
    ...(parent ? { parentId: parent } : {}),
    ...(productType ? { productType } : {}),
  };
}
