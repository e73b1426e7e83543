import type { ChannelIntegration, ConnectResult, ProfileUpdate } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import { GRAPH_ID, MetaMessagingAdapter, type MetaAttachmentKind, type OutgoingFile } from '../meta/meta-messaging.js';

/** The Instagram webhook fields Parley reads: direct messages and, for `photonetVOff`, comments. */
export const INSTAGRAM_SUBSCRIBED_FIELDS = 'messages,messaging_postbacks,messaging_seen,comments,live_comments';

/**
 * `photonetV3`: an Instagram professional account's direct messages through the Instagram API with
 * Instagram Login (host PARLEY_INSTAGRAM_GRAPH_URL). Credentials: `accessToken` (an Instagram User
 * access token) and `appSecret`. Connecting reads `GET /me` and subscribes the app to the
 * account's webhooks; `identifier` and `externalId` are the account's `user_id` (the id webhooks
 * carry in `entry[].id`). Instagram takes files by URL only: Parley's public file links
 * (PARLEY_PUBLIC_URL). See docs/channels/instagram.md.
 */
export class InstagramAdapter extends MetaMessagingAdapter {
  readonly type: string = 'photonetV3';
  protected readonly product = 'Instagram';
  protected readonly textLimit = 1000;

  protected root(): string {
    return this.kit.config.instagramGraphUrl;
  }

  protected token(integration: Pick<ChannelIntegration, 'credentials'>): string {
    return integration.credentials.accessToken ?? '';
  }

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const api = this.api(integration);
    const me = await this.connectRead(
      () =>
        api.get<{ user_id?: string | number; username?: string; profile_picture_url?: string }>('me', {
          fields: 'user_id,username,profile_picture_url',
        }),
      'access token',
    );
    const userId = String(me.user_id ?? '');
    if (!GRAPH_ID.test(userId)) throw new ChannelRejectedError('Meta answered /me without a user_id');
    await this.connectRead(
      () => api.post(`${userId}/subscribed_apps`, { subscribed_fields: INSTAGRAM_SUBSCRIBED_FIELDS }),
      'webhook subscription',
    );
    return {
      login: me.username || userId,
      externalId: userId,
      identifier: userId,
      avatar: me.profile_picture_url ?? '',
      url: me.username ? `https://www.instagram.com/${me.username}` : '',
    };
  }

  protected async profileOf(integration: ChannelIntegration, userId: string): Promise<ProfileUpdate | null> {
    const user = await this.api(integration).get<{ name?: string; username?: string; profile_pic?: string }>(userId, {
      fields: 'name,username,profile_pic',
    });
    const update: ProfileUpdate = {};
    if (user.name || user.username) update.name = user.name || user.username;
    if (user.username) {
      update.login = user.username;
      update.profileUrl = `https://www.instagram.com/${user.username}`;
    }
    if (user.profile_pic) update.avatar = user.profile_pic;
    return Object.keys(update).length ? update : null;
  }

  /** Instagram fetches the file itself: it needs Parley's public https link. */
  protected async attachmentPayload(
    _integration: ChannelIntegration,
    _kind: MetaAttachmentKind,
    attachment: OutgoingFile,
  ): Promise<Record<string, unknown>> {
    const url = typeof attachment.media.url === 'string' ? attachment.media.url : '';
    if (!/^https:\/\//i.test(url)) {
      throw new ChannelRejectedError(
        'Instagram fetches files by URL: Parley needs a public https address (PARLEY_PUBLIC_URL) to send files',
      );
    }
    return { url };
  }
}
