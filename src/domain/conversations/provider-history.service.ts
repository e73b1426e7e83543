import type { IntegrationRow } from '../../db/schema.js';
import type { Attachment } from '../channels/channel.js';
import type { Deps } from '../context.js';
import { invalid } from '../errors.js';
import * as repo from './conversations.repo.js';
import type { IngestService } from './ingest.service.js';

const MAX_TEXT = 64 * 1024;

/**
 * History a provider reports besides customers' messages: messages the business wrote in the
 * provider's own interface (stored as outgoing, once per provider id), and edits of stored
 * messages. What Parley itself sent was stored when the provider accepted it, so a report of it
 * finds the message and changes nothing.
 */
export class ProviderHistoryService {
  constructor(
    private readonly deps: Deps,
    private readonly ingest: Pick<IngestService, 'openOutgoingConversation' | 'recordOutgoing'>,
  ) {}

  /** Stores a message written outside Parley to a contact; `false` when it was stored before. */
  async recordExternalOutgoing(
    integration: IntegrationRow,
    m: { socialId: string; channelExternalId: string; externalId: string; text: string; attachments: Attachment[]; at: number },
  ): Promise<boolean> {
    if (!m.externalId || !m.socialId || !m.channelExternalId) throw invalid('Outgoing message without external ids');
    if (m.text.length > MAX_TEXT) throw invalid('Message text is too long');
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      if (await repo.findMessageByExternalId(trx, integration.id, m.externalId)) return false;
      const { source, lead, isNewCustomer, isNewLead } = await this.ingest.openOutgoingConversation(
        trx,
        integration,
        { socialId: m.socialId, channelExternalId: m.channelExternalId },
        m.at,
      );
      await this.ingest.recordOutgoing(trx, { integration, source, lead, userId: null, isNewCustomer, isNewLead }, [
        { externalId: m.externalId, text: m.text, attachments: m.attachments, replyTo: undefined, customId: null, at: m.at },
      ]);
      return true;
    });
  }

  /** Replaces the text and attachments of a stored message the provider reports edited; `false` when Parley has no such message. */
  async applyEdit(integration: IntegrationRow, externalId: string, content: { text: string; attachments: Attachment[] }): Promise<boolean> {
    if (content.text.length > MAX_TEXT) throw invalid('Message text is too long');
    const message = await repo.findMessageByExternalId(this.deps.db.kysely, integration.id, externalId);
    if (!message) return false;
    await repo.updateMessageContent(this.deps.db.kysely, message.id, {
      text: content.text,
      attachments: JSON.stringify(content.attachments),
    });
    return true;
  }
}
