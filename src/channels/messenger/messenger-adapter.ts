import { invalid } from '../../domain/errors.js';
import type { ChannelIntegration, ConnectResult, ProfileUpdate } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import { GRAPH_ID, MetaMessagingAdapter, type MetaAttachmentKind, type OutgoingFile } from '../meta/meta-messaging.js';

/** The page webhook fields Parley reads: Messenger conversations and, for `social1_group`, the page feed. */
export const PAGE_SUBSCRIBED_FIELDS = 'messages,messaging_postbacks,message_echoes,message_reads,message_deliveries,feed';

/**
 * `social1_messenger`: a Facebook Page's Messenger conversations (Messenger Platform). Credentials:
 * `pageAccessToken`, `pageId`, `appSecret` (verifies webhook signatures). Connecting reads the
 * Page and subscribes the app to its webhooks; `identifier` is the Page id, shared with the
 * `social1_group` integration of the same Page. Files are uploaded to
 * `POST /{pageId}/message_attachments` and sent by attachment id. See docs/channels/messenger.md.
 */
export class MessengerAdapter extends MetaMessagingAdapter {
  readonly type: string = 'social1_messenger';
  protected readonly product = 'Messenger';
  protected readonly textLimit = 2000;

  protected root(): string {
    return this.kit.config.metaGraphUrl;
  }

  protected token(integration: Pick<ChannelIntegration, 'credentials'>): string {
    return integration.credentials.pageAccessToken ?? '';
  }

  /** Reads the Page with its token and subscribes the app to the Page's webhooks. */
  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const pageId = integration.credentials.pageId ?? '';
    if (!GRAPH_ID.test(pageId))
      throw invalid('The Page id is a number', [{ path: 'body.credentials.pageId', message: 'must be the numeric Page id' }]);
    const api = this.api(integration);
    const page = await this.connectRead(
      () => api.get<{ name?: string; picture?: { data?: { url?: string } } }>(pageId, { fields: 'name,picture' }),
      'Page id',
    );
    await this.connectRead(
      () => api.post(`${pageId}/subscribed_apps`, { subscribed_fields: PAGE_SUBSCRIBED_FIELDS }),
      'webhook subscription',
    );
    return {
      login: page.name || pageId,
      externalId: pageId,
      identifier: pageId,
      avatar: page.picture?.data?.url ?? '',
      url: `https://www.facebook.com/${pageId}`,
    };
  }

  protected async profileOf(integration: ChannelIntegration, userId: string): Promise<ProfileUpdate | null> {
    const user = await this.api(integration).get<{ first_name?: string; last_name?: string; profile_pic?: string }>(userId, {
      fields: 'first_name,last_name,profile_pic',
    });
    const name = [user.first_name, user.last_name].filter(Boolean).join(' ');
    const update: ProfileUpdate = {};
    if (name) update.name = name;
    if (user.profile_pic) update.avatar = user.profile_pic;
    return Object.keys(update).length ? update : null;
  }

  /** Uploads the file (Meta needs no access to Parley) and names it by its attachment id. */
  protected async attachmentPayload(
    integration: ChannelIntegration,
    kind: MetaAttachmentKind,
    attachment: OutgoingFile,
  ): Promise<Record<string, unknown>> {
    const fileId = typeof attachment.media.fileId === 'string' ? attachment.media.fileId : '';
    const found = fileId ? await this.kit.readFile(fileId) : undefined;
    if (!found) throw new ChannelRejectedError('The uploaded file is no longer available');
    const mime = found.file.mime || 'application/octet-stream';
    const form = new FormData();
    form.set('message', JSON.stringify({ attachment: { type: kind, payload: { is_reusable: true } } }));
    form.set('filedata', new Blob([found.bytes], { type: mime }), found.file.name || 'file');
    const uploaded = await this.guard(integration, () =>
      this.api(integration).postForm<{ attachment_id?: string }>(`${integration.externalId}/message_attachments`, form),
    );
    if (!uploaded.attachment_id) throw new ChannelRejectedError('Meta answered the attachment upload without an id');
    return { attachment_id: uploaded.attachment_id };
  }
}
