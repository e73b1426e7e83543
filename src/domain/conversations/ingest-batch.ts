import type { Executor } from '../../db/database.js';
import type { IntegrationRow, LeadRow, MessageRow, ProfileRow, SourceRow } from '../../db/schema.js';
import type { IncomingMessage } from '../../channels/channel.js';
import { eventInserted, eventPayloadText, type NewEvent } from '../../events/outbox.js';
import * as repo from './conversations.repo.js';
import { presentHistoryMessage } from './history-message.js';
import { afterIncoming, joinsLatestLead } from './lead-lifecycle.js';
import type { IngestResult } from './ingest.service.js';

/** One message of a batch: the integration it came through and the message, validated. */
export interface IngestUnit {
  integration: IntegrationRow;
  incoming: IncomingMessage;
}

/** A message of a batch that goes the short way: a known sender on a known channel, joining its lead. */
interface Short {
  index: number;
  unit: IngestUnit;
  profile: ProfileRow;
  source: SourceRow;
  lead: LeadRow;
  messageId: number;
  /** The message moves its channel's reply deadline (`source` has the new one). */
  moves: boolean;
}

/**
 * PostgreSQL: the messages of a batch ingested in the caller's transaction, in five round trips
 * with its begin and commit whatever the batch's size (docs/performance.md, "issue 19, fourth
 * pass"). One message per round trip was the limit: each of the five statements of a message
 * costs this process and the server more than the rows it writes.
 *
 * 1. The senders' profiles are locked, in id order.
 * 2. For each message of a locked sender (the first of each sender in the batch): the redelivery
 *    check, the channel, the latest lead and an id for the message, read after the locks.
 * 3. The messages of known senders on known channels that join their latest lead, from a profile
 *    the provider reports unchanged, without a quoted message, one per lead: stored with their
 *    leads' new fields, their channels' moved reply deadlines and their `message.incoming` events
 *    in one statement.
 * 4. Every other message (a new customer, channel or lead, a changed profile, a reply, a sender's
 *    second message in the batch) goes through `one`, the single-message ingest, in this
 *    transaction and in batch order, after the others: each reads what the batch wrote before it.
 *
 * The outcome is that of ingesting the messages one after another. Any error fails the whole
 * transaction; the caller then ingests each message on its own.
 */
export async function ingestBatchIn(
  trx: Executor,
  units: IngestUnit[],
  now: number,
  one: (trx: Executor, unit: IngestUnit) => Promise<IngestResult>,
): Promise<IngestResult[]> {
  const results = new Array<IngestResult | undefined>(units.length);
  const keyOf = (unit: IngestUnit) => `${unit.integration.id}\u0000${unit.incoming.sender.socialId}`;
  const profiles = await repo.lockProfiles(
    trx,
    units.map((u) => u.integration.id),
    units.map((u) => u.incoming.sender.socialId),
  );
  const profileByKey = new Map(profiles.map((p) => [`${p.integration_id}\u0000${p.social_id}`, p]));

  // The first message of each known sender is read in one statement; the rest go the long way.
  const candidates: { index: number; unit: IngestUnit; profile: ProfileRow }[] = [];
  const long: number[] = [];
  const seen = new Set<string>();
  units.forEach((unit, index) => {
    const key = keyOf(unit);
    const profile = profileByKey.get(key);
    if (profile && !seen.has(key)) candidates.push({ index, unit, profile });
    else long.push(index);
    seen.add(key);
  });

  const shorts: Short[] = [];
  if (candidates.length) {
    const states = await repo.conversationStates(trx, {
      integrationIds: candidates.map((c) => c.unit.integration.id),
      customerIds: candidates.map((c) => c.profile.customer_id),
      externalIds: candidates.map((c) => c.unit.incoming.externalId),
      channelTypes: candidates.map((c) => c.unit.incoming.channel.type),
      channelIds: candidates.map((c) => c.unit.incoming.channel.externalId),
    });
    const leads = new Set<number>();
    // Channels whose reply deadline a short message moves: the others' presentation would lag.
    const moved = new Set<number>();
    candidates.forEach((candidate, i) => {
      const { duplicate, source, lead, messageId } = states[i];
      if (duplicate) {
        results[candidate.index] = {
          messageId: duplicate.id,
          leadId: duplicate.lead_id,
          isNewLead: false,
          isNewCustomer: false,
          duplicate: true,
        };
        return;
      }
      const short =
        source && lead && !leads.has(lead.id) && !moved.has(source.id) && goesShort(candidate.unit.incoming, candidate.profile, lead);
      if (!short) {
        long.push(candidate.index);
        return;
      }
      leads.add(lead.id);
      const expiresAt = movedExpiry(candidate.unit.incoming, source);
      if (expiresAt !== undefined) moved.add(source.id);
      shorts.push({
        ...candidate,
        source: expiresAt === undefined ? source : { ...source, expires_at: expiresAt },
        lead,
        messageId,
        moves: expiresAt !== undefined,
      });
    });
  }

  if (shorts.length) {
    const batch = shorts.map((s) => shortMessage(s, now));
    const { eventIdByLead, hooksByEvent } = await repo.storeIncomingBatch(trx, batch, now);
    for (const [i, s] of shorts.entries()) {
      const eventId = eventIdByLead.get(s.lead.id);
      if (eventId === undefined) throw new Error(`no event stored for lead ${s.lead.id}`);
      await eventInserted(trx, batch[i].event, eventId, hooksByEvent.get(eventId) ?? [], now);
      results[s.index] = { messageId: s.messageId, leadId: s.lead.id, isNewLead: false, isNewCustomer: false, duplicate: false };
    }
  }

  long.sort((a, b) => a - b);
  for (const index of long) results[index] = await one(trx, units[index]);
  return results as IngestResult[];
}

/**
 * Whether a message needs nothing but its own row, its lead's fields, its event and maybe its
 * channel's reply deadline: the profile is as the provider reports it, the latest lead takes the
 * message, and no quoted message is to be looked up. (The single-message ingest does the same
 * otherwise, with its extra statements.)
 */
function goesShort(incoming: IncomingMessage, profile: ProfileRow, lead: LeadRow): boolean {
  const s = incoming.sender;
  return (
    !incoming.replyToExternalId &&
    joinsLatestLead(lead) &&
    (s.login === undefined || s.login === profile.login) &&
    (s.name === undefined || s.name === profile.name) &&
    (s.avatar === undefined || s.avatar === profile.avatar) &&
    (s.profileUrl === undefined || s.profileUrl === profile.profile_url)
  );
}

/** The channel's new reply deadline when the message moves it (it only moves forward), else undefined. */
function movedExpiry(incoming: IncomingMessage, source: SourceRow): number | undefined {
  const expiresAt = incoming.channel.expiresAt;
  if (expiresAt === undefined || expiresAt === null) return undefined;
  return source.expires_at === null || expiresAt > source.expires_at ? expiresAt : undefined;
}

/** The rows a short message writes, as the single-message ingest would write them. */
function shortMessage(s: Short, now: number): repo.BatchedIncoming & { event: NewEvent } {
  const { integration, incoming } = s.unit;
  const message: MessageRow = {
    id: s.messageId,
    account_id: integration.account_id,
    lead_id: s.lead.id,
    source_id: s.source.id,
    integration_id: integration.id,
    external_id: incoming.externalId,
    incoming: 1,
    text: incoming.text ?? '',
    url: incoming.url ?? '',
    attachments: JSON.stringify(incoming.attachments ?? []),
    reply_to: null,
    preview: incoming.preview ? JSON.stringify(incoming.preview) : null,
    profile_id: s.profile.id,
    user_id: null,
    custom_id: null,
    unread: 1,
    created_at: incoming.datetime,
    delivery_status: null,
    delivery_error: null,
  };
  const lead = { id: s.lead.id, ...afterIncoming(s.lead, s.messageId, incoming.datetime), updated_at: now };
  const event: NewEvent = {
    accountId: integration.account_id,
    type: 'message.incoming',
    leadId: s.lead.id,
    payload: {
      leadId: s.lead.id,
      isNewLead: false,
      isNewCustomer: false,
      message: presentHistoryMessage(message, s.source, integration, s.profile),
    },
  };
  const source = s.moves ? { id: s.source.id, expires_at: s.source.expires_at as number } : undefined;
  return { message, lead, source, eventPayload: eventPayloadText(event), event };
}
