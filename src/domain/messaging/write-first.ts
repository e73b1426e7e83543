import type { IntegrationRow, LeadRow, MessageRow } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Deps } from '../context.js';
import type { IngestService } from '../conversations/ingest.service.js';
import type { OutgoingRecord } from '../conversations/conversations.types.js';
import { conflict, rateLimited } from '../errors.js';
import * as repo from './messaging.repo.js';
import * as claims from './write-first.repo.js';
import { findProfileBySocialId, latestLead } from '../conversations/conversations.repo.js';
import type { PostedMessage } from './messaging.types.js';
import { secondsToUtcMidnight, utcDay } from './outgoing.js';

/**
 * The write-first steps of `POST /messaging/post`. A contact is new when no profile of the
 * integration has its id and it was never written first before; each new contact takes one place
 * of the integration's daily limit (per UTC day), reserved before the channel is asked and
 * released when the channel does not take the message. A reservation left by a crash after the
 * provider accepted stays counted, which errs on the side of the provider's own limit.
 */
export class WriteFirst {
  constructor(
    private readonly deps: Deps,
    private readonly ingest: IngestService,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /**
   * What is known of the destination: its latest lead, the channel to write to (its own id when
   * new), and, for a destination no profile has yet, the customer of the account who has that
   * phone and a lead on the integration (a lead made by `POST /leads`), whose lead it continues.
   */
  async knownContact(
    integration: IntegrationRow,
    destination: string,
  ): Promise<{ lead: LeadRow | undefined; channelExternalId: string; channelToken: string | null; customerId?: number }> {
    const profile = await findProfileBySocialId(this.db, integration.id, destination);
    if (!profile) {
      const customerId = destination.startsWith('+')
        ? await repo.customerByPhoneOnIntegration(this.db, integration.account_id, integration.id, destination)
        : undefined;
      return { lead: undefined, channelExternalId: destination, channelToken: null, ...(customerId ? { customerId } : {}) };
    }
    const lead = await latestLead(this.db, profile.customer_id, integration.id);
    const source = await repo.latestMessageSource(this.db, profile.customer_id, integration.id);
    return { lead, channelExternalId: source?.external_id ?? destination, channelToken: source?.token ?? null };
  }

  /**
   * Takes a place of today's limit when the destination is a new contact: the id of the
   * reservation, or undefined when the contact is not new. Above the limit: 429 `daily_limit` with
   * Retry-After at the next UTC midnight.
   */
  async reserve(integration: IntegrationRow, destination: string, limit: number): Promise<number | undefined> {
    const now = this.deps.clock.now();
    return this.db.transaction().execute(async (trx) => {
      await repo.lockIntegration(trx, this.deps.db.dialect, integration.id);
      if (await findProfileBySocialId(trx, integration.id, destination)) return undefined;
      if (await repo.isWriteFirstContact(trx, integration.id, destination)) return undefined;
      const day = utcDay(now);
      if ((await repo.countWriteFirstContacts(trx, integration.id, day)) >= limit) {
        throw rateLimited(
          secondsToUtcMidnight(now),
          `The daily limit of ${limit} new contacts of this integration is reached`,
          'daily_limit',
        );
      }
      return repo.insertWriteFirstContact(trx, {
        accountId: integration.account_id,
        integrationId: integration.id,
        socialId: destination,
        day,
        now,
      });
    });
  }

  /**
   * Claims a customId for (integration, destination) by a unique constraint, so that it holds
   * across processes: the id of the claim, or the stored messages of the first call with that
   * customId (with their lead). A claim whose first call is still under way: 409 `in_progress`.
   */
  async claim(
    integration: IntegrationRow,
    destination: string,
    customId: string,
  ): Promise<{ claimId: number } | { leadId: number; messages: MessageRow[] }> {
    try {
      const claimId = await claims.insertPostClaim(this.db, {
        accountId: integration.account_id,
        integrationId: integration.id,
        destination,
        customId,
        now: this.deps.clock.now(),
      });
      return { claimId };
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    const found = await claims.findPostClaim(this.db, integration.id, destination, customId);
    if (found?.state !== 'done' || found.lead_id === null) {
      throw conflict('A post with this customId is under way; repeat it when it has been answered', 'in_progress');
    }
    const ids = JSON.parse(found.message_ids ?? '[]') as number[];
    return { leadId: found.lead_id, messages: await claims.messagesByIds(this.db, ids) };
  }

  /** The channel did not take the post: its customId may be used again. */
  async releaseClaim(claimId: number | undefined): Promise<void> {
    if (claimId !== undefined) await claims.deletePostClaim(this.db, claimId);
  }

  async release(reservation: number | undefined): Promise<void> {
    if (reservation !== undefined) await repo.deleteWriteFirstContact(this.db, reservation);
  }

  /** Stores what the channel accepted in the contact's conversation, found or created. */
  async store(
    integration: IntegrationRow,
    contact: { socialId: string; channelExternalId: string; customerId?: number },
    userId: number,
    records: OutgoingRecord[],
    claimId?: number,
  ): Promise<PostedMessage[]> {
    const at = records[0]?.at ?? this.deps.clock.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.db.transaction().execute(async (trx) => {
          const conv = await this.ingest.openOutgoingConversation(trx, integration, contact, at);
          const messages = await this.ingest.recordOutgoing(
            trx,
            { integration, source: conv.source, lead: conv.lead, userId, isNewLead: conv.isNewLead, isNewCustomer: conv.isNewCustomer },
            records,
          );
          if (claimId !== undefined)
            await claims.completePostClaim(
              trx,
              claimId,
              conv.lead.id,
              messages.map((m) => Number(m.messageId)),
            );
          return messages.map((m) => ({ ...m, leadId: conv.lead.id }));
        });
      } catch (err) {
        // An incoming message of the same contact created its profile or channel meanwhile: run
        // again and join them.
        if (attempt < 2 && isUniqueViolation(err)) continue;
        throw err;
      }
    }
  }
}
