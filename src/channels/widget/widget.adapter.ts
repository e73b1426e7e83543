import crypto from 'node:crypto';
import {
  ChannelRejectedError,
  type ChannelAdapter,
  type ChannelIntegration,
  type ConnectResult,
  type OutgoingMessage,
  type SendResult,
} from '../../domain/channels/channel.js';

/** What the adapter needs of the widget domain (it never touches the database itself). */
export interface WidgetVisitors {
  visitorExists(integrationId: number, visitorId: string): Promise<boolean>;
}

/**
 * The site widget: Parley's own channel. Connecting makes the public widget key (the integration's
 * externalId and identifier). Sending accepts the message for a known visitor of the widget; the
 * messaging core stores it, and its committed `message.outgoing` event is pushed to the visitor's
 * open tabs by whichever process holds them (visitor-push/). A visitor who is away reads it when it
 * comes back. A channel that is no visitor of this widget is refused (422).
 */
export class WidgetAdapter implements ChannelAdapter {
  readonly type = 'widget';

  constructor(private readonly visitors: WidgetVisitors) {}

  async connect(integration: ChannelIntegration): Promise<ConnectResult> {
    const key = `wk_${crypto.randomBytes(18).toString('base64url')}`;
    const title = typeof integration.settings.title === 'string' ? integration.settings.title : '';
    return { login: integration.login || title || 'Site widget', externalId: key, identifier: key, avatar: '', url: '' };
  }

  async send(
    integration: ChannelIntegration,
    channel: { externalId: string; type: string },
    message: OutgoingMessage,
  ): Promise<SendResult> {
    if (channel.type !== 'message' || !(await this.visitors.visitorExists(integration.id, channel.externalId))) {
      throw new ChannelRejectedError('No visitor of this widget has this channel');
    }
    if (message.template) throw new ChannelRejectedError('The site widget does not send template messages');
    return { externalIds: [`wr_${crypto.randomBytes(12).toString('base64url')}`] };
  }
}
