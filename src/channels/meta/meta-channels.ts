import type { AuthContext } from '../../domain/auth/auth-context.js';
import type { Deps } from '../../domain/context.js';
import type { IngestService } from '../../domain/conversations/ingest.service.js';
import { invalid } from '../../domain/errors.js';
import { channelAppError } from '../../domain/integrations/channel-errors.js';
import { findMessageByExternalId, findProfileBySocialId } from '../../domain/conversations/conversations.repo.js';
import type { ProviderHistoryService } from '../../domain/conversations/provider-history.service.js';
import { findLiveIntegrationByExternalId } from '../../domain/integrations/integrations.repo.js';
import type { IntegrationsService } from '../../domain/integrations/integrations.service.js';
import type { DeliveryStatusService } from '../../domain/messaging/delivery-status.service.js';
import type { ChannelAdapter } from '../../domain/channels/channel.js';
import type { BotKit } from '../bots/bot-kit.js';
import { WhatsAppAdapter, type WhatsAppTemplate } from '../whatsapp/whatsapp-adapter.js';
import { WhatsAppInbound } from '../whatsapp/whatsapp-inbound.js';
import { InstagramAdapter } from '../instagram/instagram-adapter.js';
import { MessengerAdapter } from '../messenger/messenger-adapter.js';
import { PageCommentsAdapter } from '../messenger/page-comments-adapter.js';
import { InstagramCommentsAdapter } from '../instagram/instagram-comments-adapter.js';
import { MetaCommentsInbound, readFeedChange, readInstagramCommentChange } from './meta-comments-inbound.js';
import { MetaMessagingInbound } from './meta-messaging-inbound.js';
import { MetaWebhooks } from './meta-webhooks.js';

export interface MetaParts {
  ingest: Pick<IngestService, 'ingest' | 'recordEcho'>;
  integrations: Pick<IntegrationsService, 'channelIntegration' | 'get'>;
  deliveryStatuses: Pick<DeliveryStatusService, 'record' | 'recordUpTo'>;
  history: Pick<ProviderHistoryService, 'applyEdit'>;
}

/**
 * Meta's products (WhatsApp Cloud API `msgra_business_api`, Messenger `social1_messenger`,
 * Page comments `social1_group`, Instagram direct messages `photonetV3` and comments
 * `photonetVOff`): their adapters, the shared
 * webhook endpoint with each product plugged in by integration type, and the template listing.
 */
export class MetaChannels {
  readonly webhooks: MetaWebhooks;
  readonly whatsapp: WhatsAppAdapter;
  readonly messenger: MessengerAdapter;
  readonly instagram: InstagramAdapter;
  readonly pageComments: PageCommentsAdapter;
  readonly instagramComments: InstagramCommentsAdapter;

  constructor(
    deps: Deps,
    kit: BotKit,
    private readonly parts: MetaParts,
  ) {
    this.whatsapp = new WhatsAppAdapter(kit);
    this.webhooks = new MetaWebhooks(deps, kit, parts.integrations);
    this.webhooks.register(
      new WhatsAppInbound(kit, this.whatsapp, {
        ...parts,
        sibling: async (row, phoneNumberId) => {
          const found = await findLiveIntegrationByExternalId(deps.db.kysely, row.account_id, row.type, phoneNumberId);
          return found ? { row: found, integration: parts.integrations.channelIntegration(found) } : undefined;
        },
      }),
    );
    this.messenger = new MessengerAdapter(kit);
    this.instagram = new InstagramAdapter(kit);
    const messaging = {
      ...parts,
      knownProfile: async (integrationId: number, socialId: string) =>
        !!(await findProfileBySocialId(deps.db.kysely, integrationId, socialId)),
    };
    this.webhooks.register(new MetaMessagingInbound(kit, this.messenger, ['page'], messaging));
    this.webhooks.register(new MetaMessagingInbound(kit, this.instagram, ['instagram'], messaging));
    this.pageComments = new PageCommentsAdapter(kit, this.messenger);
    this.instagramComments = new InstagramCommentsAdapter(kit, this.instagram);
    const comments = {
      ...parts,
      knownMessage: async (integrationId: number, externalId: string) =>
        !!(await findMessageByExternalId(deps.db.kysely, integrationId, externalId)),
    };
    this.webhooks.register(new MetaCommentsInbound(this.pageComments, ['page'], readFeedChange, comments));
    this.webhooks.register(new MetaCommentsInbound(this.instagramComments, ['instagram'], readInstagramCommentChange, comments));
  }

  get adapters(): ChannelAdapter[] {
    return [this.whatsapp, this.messenger, this.instagram, this.pageComments, this.instagramComments];
  }

  /** Approved templates of a WhatsApp integration the caller may use (else 404; other types 400). */
  async templates(auth: AuthContext, integrationId: number): Promise<WhatsAppTemplate[]> {
    const row = await this.parts.integrations.get(auth, integrationId);
    if (row.type !== this.whatsapp.type) {
      throw invalid(`Integration type ${row.type} has no message templates`, [
        { path: 'params.id', message: 'is not a msgra_business_api integration' },
      ]);
    }
    try {
      return await this.whatsapp.templates(this.parts.integrations.channelIntegration(row));
    } catch (err) {
      throw channelAppError(err);
    }
  }
}
