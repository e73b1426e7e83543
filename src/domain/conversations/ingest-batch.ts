import type { Executor } from '../../db/database.js';
import type { CustomerRow, IntegrationRow, LeadRow, MessageRow, ProfileRow } from '../../db/schema.js';
import type { IncomingMessage } from '../channels/channel.js';
import { eventsInserted, eventPayloadText, type NewEvent } from '../../events/outbox.js';
import { customerView } from '../customers/customers.types.js';
import { presentLead } from '../leads/lead-presenter.js';
import * as repo from './conversations.repo.js';
import { presentHistoryMessage } from './history-message.js';
import { afterIncoming, joinsLatestLead } from './lead-lifecycle.js';
import {
  incomingMessageValues,
  movedExpiry,
  newCustomerValues,
  newProfileValues,
  newSourceValues,
  profilePatch,
} from './conversation-rows.js';
import type { IngestResult } from './conversations.types.js';

/** One message of a batch: the integration it came through and the message, validated. */
export interface IngestUnit {
  integration: IntegrationRow;
  incoming: IncomingMessage;
}

/**
 * PostgreSQL: the messages of a batch ingested in the caller's transaction, in four round trips
 * with its begin and commit whatever the batch's size (docs/performance.md). One message per round trip was the limit: each of the five
 * statements of a message costs this process and the server more than the rows it writes.
 *
 * 1-2. In one round trip (`lockConversations`): the senders' profiles are locked, in key order;
 *    then, for the first message of each sender in the batch, read after the locks: its profile,
 *    the redelivery check, the channel, the latest lead, and ids for what the message may create.
 * 3. Those messages that need no look-up beyond it are stored in one statement, with what they
 *    create and change: a known sender joining its latest lead, or a sender seen first (its
 *    customer, profile, lead and, when new, channel), from a profile the provider reports
 *    unchanged, without a quoted message, one per lead and per new or moved channel; with their
 *    events, in the order the single-message ingest records them.
 * 4. Every other message (a changed profile, a new lead or channel of a known customer, a reply,
 *    a sender's second message in the batch) goes through `one`, the single-message ingest, in this
 *    transaction and in batch order, after the others: each reads what the batch wrote before it.
 *
 * The outcome is that of ingesting the messages one after another. Any error fails the whole
 * transaction (two batches creating the same new customer at once meet on a unique index); the
 * caller then ingests each message on its own. `release` (PostgreSQL, db/database.ts
 * `releaseLockSql`): the SQL that lets go of the transaction's lane lock, carried by step 3's
 * statement when there is one.
 */
export async function ingestBatchIn(
  trx: Executor,
  units: IngestUnit[],
  now: number,
  one: (trx: Executor, unit: IngestUnit) => Promise<IngestResult>,
  release?: string,
): Promise<IngestResult[]> {
  if (!units.length) return [];
  const results = new Array<IngestResult | undefined>(units.length);

  // The first message of each sender is read with the locks; the rest go the long way.
  const firsts: { index: number; unit: IngestUnit }[] = [];
  const long: number[] = [];
  const seen = new Set<string>();
  units.forEach((unit, index) => {
    const key = `${unit.integration.id}\u0000${unit.incoming.sender.socialId}`;
    if (seen.has(key)) long.push(index);
    else firsts.push({ index, unit });
    seen.add(key);
  });

  const store = new Store(now);
  const conversations = await repo.lockConversations(trx, {
    integrationIds: firsts.map((f) => f.unit.integration.id),
    socialIds: firsts.map((f) => f.unit.incoming.sender.socialId),
    externalIds: firsts.map((f) => f.unit.incoming.externalId),
    channelTypes: firsts.map((f) => f.unit.incoming.channel.type),
    channelIds: firsts.map((f) => f.unit.incoming.channel.externalId),
  });
  firsts.forEach((first, i) => {
    const { profile, state } = conversations[i];
    if (state.duplicate) {
      const { id, lead_id } = state.duplicate;
      results[first.index] = { messageId: id, leadId: lead_id, isNewLead: false, isNewCustomer: false, duplicate: true };
      return;
    }
    const result = store.add(first.unit, profile, state);
    if (result) results[first.index] = result;
    else long.push(first.index);
  });

  await store.write(trx, release);

  long.sort((a, b) => a - b);
  for (const index of long) results[index] = await one(trx, units[index]);
  return results as IngestResult[];
}

/** The rows and events of the messages stored in step 3, gathered one message at a time. */
class Store {
  private readonly batch: repo.IncomingBatch = {
    customers: [],
    profiles: [],
    sources: [],
    leads: [],
    messages: [],
    leadUpdates: [],
    deadlines: [],
    events: [],
  };
  private readonly events: NewEvent[] = [];
  /** Leads written, and channels created or moved, by the messages added so far. */
  private readonly leads = new Set<number>();
  private readonly channels = new Set<string>();

  constructor(private readonly now: number) {}

  /**
   * Adds a message when it can go the short way (see {@link ingestBatchIn}), answering its
   * result; undefined when it must go through the single-message ingest.
   */
  add(unit: IngestUnit, known: ProfileRow | undefined, state: repo.ConversationState): IngestResult | undefined {
    const { integration, incoming } = unit;
    if (incoming.replyToExternalId) return undefined;
    if (known && Object.keys(profilePatch(known, incoming.sender)).length) return undefined;
    // A phone the sender reported may fill its customer's (the single-message ingest does that).
    if (known && incoming.sender.phone !== undefined) return undefined;
    if (known && !(state.lead && joinsLatestLead(state.lead) && !this.leads.has(state.lead.id))) return undefined;
    if (known && !state.source) return undefined;
    const channel = `${integration.id}\u0000${incoming.channel.type}\u0000${incoming.channel.externalId}`;
    if (this.channels.has(channel)) return undefined;

    const now = this.now;
    const messageId = state.ids.message;
    const profile = known ?? this.newCustomer(unit, state);
    let source = state.source;
    if (!source) {
      source = { id: state.ids.source as number, ...newSourceValues(integration, profile.customer_id, incoming, now) };
      this.batch.sources.push(source);
    } else {
      const expiresAt = movedExpiry(incoming.channel, source);
      if (expiresAt !== undefined) {
        source = { ...source, expires_at: expiresAt };
        this.batch.deadlines.push({ id: source.id, expires_at: expiresAt });
      }
    }
    this.channels.add(channel);

    let lead: LeadRow;
    if (known) {
      const latest = state.lead as LeadRow;
      lead = { ...latest, ...afterIncoming(latest, messageId, incoming.datetime), updated_at: now };
      this.batch.leadUpdates.push(leadUpdate(lead));
    } else {
      const created = newLead(unit, profile, state.ids.lead as number, now);
      lead = { ...created, ...afterIncoming(created, messageId, incoming.datetime), updated_at: now };
      this.batch.leads.push(lead);
    }
    this.leads.add(lead.id);

    const message: MessageRow = {
      id: messageId,
      ...incomingMessageValues(integration, { leadId: lead.id, sourceId: source.id, profileId: profile.id }, incoming, null),
      delivery_status: null,
      delivery_error: null,
    };
    this.batch.messages.push(message);

    const isNew = !known;
    const accountId = integration.account_id;
    if (isNew) {
      const customer = this.batch.customers[this.batch.customers.length - 1];
      this.event({
        accountId,
        type: 'customer.created',
        payload: { customerId: customer.id, customer: customerView(customer, [profile]) },
      });
      this.event({ accountId, type: 'lead.created', leadId: lead.id, payload: { leadId: lead.id, lead: presentLead(lead) } });
    }
    this.event({
      accountId,
      type: 'message.incoming',
      leadId: lead.id,
      payload: {
        leadId: lead.id,
        isNewLead: isNew,
        isNewCustomer: isNew,
        message: presentHistoryMessage(message, source, integration, profile),
      },
    });
    return { messageId, leadId: lead.id, isNewLead: isNew, isNewCustomer: isNew, duplicate: false };
  }

  /** Stores what was added (its statement carrying `release`), and fans its events out to the account's webhooks. */
  async write(trx: Executor, release: string | undefined): Promise<void> {
    if (!this.batch.messages.length) return;
    const { eventIds, hooks } = await repo.storeIncomingBatch(trx, this.batch, this.now, release);
    await eventsInserted(trx, this.events, eventIds, hooks, this.now);
  }

  private event(event: NewEvent): void {
    this.events.push(event);
    this.batch.events.push({
      accountId: event.accountId,
      type: event.type,
      leadId: event.leadId ?? null,
      payload: eventPayloadText(event),
    });
  }

  /** A sender seen first: its customer and profile, as the single-message ingest creates them. */
  private newCustomer(unit: IngestUnit, state: repo.ConversationState): ProfileRow {
    const { integration, incoming } = unit;
    const s = incoming.sender;
    const now = this.now;
    const customer: CustomerRow = { id: state.ids.customer as number, phone_as_typed: null, ...newCustomerValues(integration, s, now) };
    const profile: ProfileRow = { id: state.ids.profile as number, ...newProfileValues(integration, customer.id, s, now) };
    this.batch.customers.push(customer);
    this.batch.profiles.push(profile);
    return profile;
  }
}

/** A lead's message-fed fields and `updated_at`, as a batch write (`storeIncomingBatch`) updates them. */
export function leadUpdate(lead: LeadRow): repo.IncomingBatch['leadUpdates'][number] {
  const {
    id,
    unread_count,
    last_message_id,
    last_message_at,
    last_message_incoming,
    awaiting_since,
    response_time,
    responded_at,
    updated_at,
  } = lead;
  return {
    id,
    unread_count,
    last_message_id,
    last_message_at,
    last_message_incoming,
    awaiting_since,
    response_time,
    responded_at,
    updated_at,
  };
}

/** A new inbox lead with the columns' defaults, as the single-message ingest creates it. */
function newLead(unit: IngestUnit, profile: ProfileRow, id: number, now: number): LeadRow {
  return {
    id,
    account_id: unit.integration.account_id,
    integration_id: unit.integration.id,
    customer_id: profile.customer_id,
    user_id: null,
    status_id: null,
    status_type: 'inbox',
    details: '',
    amount: 0,
    address: '',
    ttn: '',
    custom_data: '',
    custom_fields: '{}',
    payment_type_id: null,
    items: '[]',
    unread_count: 0,
    last_message_id: null,
    last_message_at: unit.incoming.datetime,
    last_message_incoming: null,
    awaiting_since: null,
    response_time: null,
    responded_at: null,
    created_at: now,
    updated_at: now,
  };
}
