import type { IntegrationRow, LeadRow, MessageRow, SourceRow } from '../../db/schema.js';
import type { ChannelRegistry } from '../channels/registry.js';
import type { Deps } from '../context.js';
import { findProfile, findProfileForUpdate } from '../conversations/conversations.repo.js';
import type { HistoryMessage } from '../conversations/history-message.js';
import type { IngestService } from '../conversations/ingest.service.js';
import { AppError, forbidden, invalid } from '../errors.js';
import { channelAppError } from '../integrations/channel-errors.js';
import type { IntegrationsService } from '../integrations/integrations.service.js';
import { lockLead } from './messaging.repo.js';
import { withTimeout } from './outgoing.js';
import * as repo from './private-reply.repo.js';
import { liveIntegrationsByIdentifier } from '../integrations/integrations.repo.js';
import { mergeCustomer } from '../customers/customers.repo.js';

export interface PrivateReplyInput {
  lead: LeadRow;
  /** The comment channel the send names. */
  source: SourceRow;
  /** The comment integration. */
  integration: IntegrationRow;
  userId: number;
  text: string;
  hasAttachment: boolean;
  hasTemplate: boolean;
  /** The comment answered (`replyId`); the customer's latest comment on the channel when absent. */
  replyTo: MessageRow | undefined;
  customId: string | null;
  /** Whether the caller may use an integration (a manager limited to some integrations). */
  mayUse: (integrationId: number) => boolean;
}

const refused = (message: string) => new AppError(422, 'channel_rejected', message);

/**
 * Private replies to comments (docs/api/messaging.md "Private replies"): a send with `private:
 * true` on a lead's comment channel becomes one direct message to the comment's author, through
 * the direct-message integration of the same account sharing the comment integration's
 * `identifier` (docs/api/integrations.md), and lands in that integration's lead of the customer.
 * The comment author and the direct-message contact are one Customer. One reply per comment, within
 * the provider's window (Meta: 7 days): both refused (422) before the provider is asked.
 */
export class PrivateReplyService {
  constructor(
    private readonly deps: Deps,
    private readonly parts: {
      channels: ChannelRegistry;
      integrations: Pick<IntegrationsService, 'channelIntegration'>;
      ingest: Pick<IngestService, 'openOutgoingConversation' | 'recordOutgoing'>;
    },
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async send(input: PrivateReplyInput): Promise<HistoryMessage[]> {
    const { integration, source, lead } = input;
    const replies = this.parts.channels.get(integration.type)?.privateReplies;
    if (!replies || source.type === 'message') {
      throw invalid('private replies answer comments of Facebook Page or Instagram comment integrations', [
        { path: 'body.private', message: 'needs a comment channel of social1_group or photonetVOff' },
      ]);
    }
    if (input.hasTemplate || input.hasAttachment) {
      throw invalid('A private reply carries text only', [{ path: 'body.message', message: 'a private reply is text only' }]);
    }
    const comment = input.replyTo ?? (await repo.latestIncoming(this.db, lead.id, source.id));
    const commentId = comment?.incoming && comment.source_id === source.id ? comment.external_id : null;
    if (!comment || !commentId) {
      throw invalid('replyId must be a comment of the customer on this channel', [
        { path: 'body.replyId', message: 'is not a customer comment on this channel' },
      ]);
    }
    const now = this.deps.clock.now();
    if (comment.created_at + replies.windowMs <= now) {
      const days = Math.round(replies.windowMs / 86_400_000);
      throw refused(`The comment is older than ${days} days: the provider accepts private replies only within ${days} days of a comment`);
    }
    const dms = await liveIntegrationsByIdentifier(this.db, integration.account_id, [replies.dmType], integration.identifier);
    const dm = dms.find((row) => row.status === 'active');
    if (!dm) {
      throw refused(
        `No active ${replies.dmType} integration of this account shares identifier ${integration.identifier}: connect the account's direct messages to answer comments privately`,
      );
    }
    if (!input.mayUse(dm.id)) throw forbidden(`The reply goes through the ${dm.type} integration #${dm.id}, which you may not use`);
    if (!(await repo.claimPrivateReply(this.db, { accountId: lead.account_id, integrationId: integration.id, commentId, now }))) {
      throw refused('This comment was answered privately already: the provider takes one private reply per comment');
    }
    let sent: { externalId: string; recipientId: string | undefined };
    try {
      const work = replies.send(this.parts.integrations.channelIntegration(dm), commentId, input.text);
      sent = await withTimeout(work, this.deps.config.sendTimeoutMs, this.deps.log, { integrationId: dm.id, comment: commentId });
    } catch (err) {
      await repo.releasePrivateReply(this.db, integration.id, commentId).catch(() => {});
      throw channelAppError(err);
    }
    return this.store(input, { ...comment, external_id: commentId }, dm, sent);
  }

  /** Stores the delivered reply in the customer's direct-message lead, linking the two profiles. */
  private async store(
    input: PrivateReplyInput,
    comment: MessageRow & { external_id: string },
    dm: IntegrationRow,
    sent: { externalId: string; recipientId: string | undefined },
  ) {
    const at = this.deps.clock.now();
    const record = {
      externalId: sent.externalId || null,
      text: input.text,
      attachments: [],
      replyTo: undefined,
      customId: input.customId,
      at,
    };
    return this.db.transaction().execute(async (trx) => {
      const author = await findProfile(trx, comment.profile_id);
      if (!sent.recipientId || !author) {
        // Meta names the author's direct-message id with every send; without it the reply is kept
        // on the comment's channel so that it is not lost.
        this.deps.log.warn(
          { integrationId: dm.id, comment: comment.external_id },
          'private reply without recipient_id: stored on the comment channel',
        );
        const current = await lockLead(trx, this.deps.db.dialect, input.lead.id);
        const out = await this.parts.ingest.recordOutgoing(
          trx,
          { integration: input.integration, source: input.source, lead: current, userId: input.userId },
          [record],
        );
        await repo.settlePrivateReply(trx, input.integration.id, comment.external_id, Number(out[0]?.messageId));
        return out;
      }
      const profile = await findProfileForUpdate(trx, dm.id, sent.recipientId);
      if (!profile) await repo.insertLinkedProfile(trx, author, dm, sent.recipientId, at);
      else if (profile.customer_id !== author.customer_id)
        await mergeCustomer(trx, dm.account_id, profile.customer_id, author.customer_id, at);
      const opened = await this.parts.ingest.openOutgoingConversation(
        trx,
        dm,
        { socialId: sent.recipientId, channelExternalId: sent.recipientId },
        at,
      );
      let source = opened.source;
      if (source.expires_at === null) {
        // A private reply opens no messaging window: free-form messages wait for the customer's answer.
        source = await trx
          .updateTable('sources')
          .set({ expires_at: at })
          .where('id', '=', source.id)
          .returningAll()
          .executeTakeFirstOrThrow();
      }
      const lead = await lockLead(trx, this.deps.db.dialect, opened.lead.id);
      const out = await this.parts.ingest.recordOutgoing(
        trx,
        { integration: dm, source, lead, userId: input.userId, isNewLead: opened.isNewLead },
        [record],
      );
      await repo.settlePrivateReply(trx, input.integration.id, comment.external_id, Number(out[0]?.messageId));
      return out;
    });
  }
}
