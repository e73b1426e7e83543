import { keyedTransaction, releaseLockSql, type Executor, type TransactionLock } from '../../db/database.js';
import { isLockNotAvailable, isStalePlan, isUniqueViolation } from '../../db/errors.js';
import { groupCommitOf, type GroupCommit } from '../../db/group-commit.js';
import { BatchQueue, oneByOne, type LaneBatch, type Outcome } from '../../db/batch-queue.js';
import { gatherWaitMs, SequenceShare } from '../../db/sequence-share.js';
import type { IntegrationRow, LeadRow, MessageRow, ProfileRow, SourceRow } from '../../db/schema.js';
import type { IncomingMessage, SenderProfile } from '../channels/channel.js';
import { integrationTypeInfo } from '../channels/integration-types.js';
import { recordEvent } from '../../events/outbox.js';
import { observeIngest } from '../../metrics/metrics.js';
import type { IntegrationHealth } from '../integrations/integration-health.js';
import type { Deps } from '../context.js';
import { invalid } from '../errors.js';
import { presentLead } from '../leads/lead-presenter.js';
import { customerView } from '../customers/customers.types.js';
import { fillEmptyPhone, findCustomerById, insertCustomer, listProfiles } from '../customers/customers.repo.js';
import * as repo from './conversations.repo.js';
import { presentHistoryMessage, replySnapshot, type HistoryMessage } from './history-message.js';
import { afterIncoming, afterOutgoing, isAutomationReply, joinsLatestLead } from './lead-lifecycle.js';
import { applyHeldStatuses, recordStatusEvent } from '../messaging/delivery-status.service.js';
import { lockLead } from '../messaging/messaging.repo.js';
import { releaseSendKey } from '../messaging/send-keys.repo.js';
import { ingestBatchIn, type IngestUnit } from './ingest-batch.js';
import type { IngestResult, OutgoingRecord } from './conversations.types.js';
import { outgoingBatchIn, outgoingEvent, storeSendsAtOnce, type OutgoingUnit } from './outgoing-batch.js';
import {
  incomingMessageValues,
  movedExpiry,
  newCustomerValues,
  newProfileValues,
  newSourceValues,
  outgoingMessageValues,
  profilePatch,
  senderPhone,
} from './conversation-rows.js';

const MAX_TEXT = 64 * 1024;
/** PostgreSQL: the most messages one batch transaction ingests. */
const MAX_BATCH = 64;
/**
 * PostgreSQL: the first key of the advisory lock an ingest batch of lane N holds (the second is N),
 * taken in Parley's schema (db/database.ts `schemaLockKey`), in every process on the database: one
 * batch per lane at a time across processes (see `ingestBatch`).
 */
export const INGEST_LANE_LOCK = 7311002;
/**
 * PostgreSQL: how long a batch waits for its lane's lock by default. A batch of another process
 * that holds it longer (stuck behind a long transaction's row lock, or its process paused) leaves
 * this process's batches of that lane without the lock for {@link INGEST_LANE_UNLOCKED_MS}: they
 * then run beside it, as batches did before lanes took turns, and a stuck process costs the others
 * one wait, never their ingest.
 */
const INGEST_LANE_WAIT_MS = 5_000;
/** PostgreSQL: how long a lane's batches go without its lock after one waited for it in vain. */
const INGEST_LANE_UNLOCKED_MS = 30_000;
/**
 * PostgreSQL: the longest a free lane waits to gather units while other processes write (see
 * `gatherWaitMs`): a send or a message answered up to this much later, for batches about as large
 * with several processes as with one (docs/performance.md "Several processes").
 */
const MAX_GATHER_MS = 2;

/**
 * The ingest pipeline: a normalized incoming message becomes customer, profile, channel, lead and
 * history in one transaction with its events. The same module stores outgoing messages. When
 * `ingest` returns, the message is committed: channels acknowledge providers only after it.
 */
export class IngestService {
  /** SQLite: concurrent ingests share one transaction (see GroupCommit). */
  private readonly group: GroupCommit | undefined;
  /** PostgreSQL: every statement is a round trip, so the hot path joins some of them. */
  private readonly postgres: boolean;
  /** PostgreSQL: concurrent ingests share batch transactions (see ingest-batch.ts), unless turned off. */
  private readonly batches: BatchQueue<IngestUnit, IngestResult> | undefined;
  /** PostgreSQL: concurrent sends share batch transactions (see outgoing-batch.ts), unless turned off. */
  private readonly outgoing: BatchQueue<OutgoingUnit, HistoryMessage[]> | undefined;

  /** PostgreSQL: lanes whose lock was not had in time, with when their batches take it again (ms, `performance.now()`). */
  private readonly unlockedLanes = new Map<number, number>();
  /** PostgreSQL: the share of message ids other processes take, from the ids this one's batches were given. */
  private readonly writers = new SequenceShare();
  private readonly laneWaitMs: number;

  /** Notes each stored message in its integration's health (docs/api/integrations.md "Health"). */
  private readonly health: Pick<IntegrationHealth, 'inbound'> | undefined;

  /** `laneWaitMs`: how long a batch waits for its lane's lock (tests shorten it); `health`: where arrivals are noted. */
  constructor(
    private readonly deps: Deps,
    options: { laneWaitMs?: number; health?: Pick<IntegrationHealth, 'inbound'> } = {},
  ) {
    this.laneWaitMs = options.laneWaitMs ?? INGEST_LANE_WAIT_MS;
    this.health = options.health;
    this.group = deps.db.dialect === 'sqlite' ? groupCommitOf(deps.db.kysely) : undefined;
    this.postgres = deps.db.dialect === 'postgres';
    const lanes = deps.config.pgIngestLanes;
    const gather = (batchMs: number) => gatherWaitMs(this.writers.current(), batchMs, MAX_GATHER_MS);
    this.batches = this.postgres && lanes > 0 ? new BatchQueue((batch) => this.ingestBatch(batch), lanes, MAX_BATCH, gather) : undefined;
    this.outgoing = this.postgres && lanes > 0 ? new BatchQueue((batch) => this.outgoingBatch(batch), lanes, MAX_BATCH, gather) : undefined;
  }

  async ingest(integration: IntegrationRow, incoming: IncomingMessage): Promise<IngestResult> {
    const started = performance.now();
    const result = await this.commit(integration, incoming);
    observeIngest(integration.type, result.duplicate, performance.now() - started);
    await this.health?.inbound(integration);
    return result;
  }

  private async commit(integration: IntegrationRow, given: IncomingMessage): Promise<IngestResult> {
    const incoming = withoutNul(given);
    validateIncoming(integration, incoming);
    if (this.group) return this.group.run((trx) => this.ingestIn(trx, integration, incoming));
    if (this.batches) return this.batches.run({ integration, incoming });
    return this.ingestAlone(integration, incoming);
  }

  /** One message in a transaction of its own (PostgreSQL). */
  private async ingestAlone(integration: IntegrationRow, incoming: IncomingMessage): Promise<IngestResult> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.deps.db.kysely.transaction().execute((trx) => this.ingestIn(trx, integration, incoming));
      } catch (err) {
        // A concurrent transaction created the same profile, channel or message first: run again
        // and find its rows. Or a schema change (an upgrade) had made a prepared statement stale.
        if (attempt < 2 && (isUniqueViolation(err) || isStalePlan(err))) continue;
        throw err;
      }
    }
  }

  /**
   * PostgreSQL: a batch of messages in one transaction (ingest-batch.ts). When it fails (a message
   * met a concurrent transaction creating the same customer, a deadlock, a stale statement after an
   * upgrade, or one message's own error), nothing of it is stored and each message is ingested on
   * its own, one after another in the batch's order, with the single-message retries: one message's
   * failure is its own.
   *
   * Lane N's batches of every process on the database run one at a time: a batch takes the lane's
   * lock with its begin, and its messages only once it holds it, so the messages that came while
   * another process's batch ran join it. Without the lock, two processes ran two batches of half
   * the size at once, and each batch's fixed cost was paid twice as often (docs/performance.md). The lock is let go by the batch's store statement, in its round
   * trip (as the commit begins when the batch stores nothing the short way): the
   * next process's batch runs while this one fans its events out, ingests its long-way messages
   * and commits, which other processes' batches used to wait for. A lock not had within the wait
   * (another process's batch stuck) is left alone by this process's batches of the lane for
   * INGEST_LANE_UNLOCKED_MS, the waiting batch first: the lock only makes batches larger, the
   * profiles' row locks keep them correct.
   */
  private async ingestBatch(batch: LaneBatch<IngestUnit>): Promise<Outcome<IngestResult>[]> {
    let began = false;
    const run = async (lock: TransactionLock | undefined): Promise<Outcome<IngestResult>[]> => {
      const results = await keyedTransaction(
        this.deps.db.kysely,
        (trx) => {
          began = true;
          const one = (t: Executor, u: IngestUnit) => this.ingestIn(t, u.integration, u.incoming);
          return ingestBatchIn(trx, batch.take(), this.deps.clock.now(), one, lock && releaseLockSql(lock));
        },
        { lock },
      );
      this.writers.note(results.flatMap((r) => (r.duplicate ? [] : [r.messageId])));
      return results.map((value) => ({ ok: true, value }));
    };
    // The lane's lock, unless it was not had in time lately.
    const lock: TransactionLock | undefined =
      performance.now() < (this.unlockedLanes.get(batch.lane) ?? 0)
        ? undefined
        : { key: [INGEST_LANE_LOCK, batch.lane], waitMs: this.laneWaitMs };
    try {
      try {
        return await run(lock);
      } catch (err) {
        // Another process's batch of this lane held the lock past the wait: this lane's batches
        // leave it for a while, this one first, and run beside that batch.
        if (!lock || began || !isLockNotAvailable(err)) throw err;
        this.deps.log.warn({ lane: batch.lane }, 'ingest lane lock not had in time: the lane batches without it for a while');
        this.unlockedLanes.set(batch.lane, performance.now() + INGEST_LANE_UNLOCKED_MS);
        return await run(undefined);
      }
    } catch (err) {
      const units = batch.take();
      this.deps.log.debug({ err, messages: units.length }, 'ingest batch rolled back: its messages are ingested one by one');
      return oneByOne(units, (u) => this.ingestAlone(u.integration, u.incoming));
    }
  }

  private async ingestIn(trx: Executor, integration: IntegrationRow, incoming: IncomingMessage): Promise<IngestResult> {
    const now = this.deps.clock.now();
    const accountId = integration.account_id;

    // Lock the sender first (PostgreSQL): one customer's messages pick their lead one at a time.
    let profile: ProfileRow | undefined;
    let existing: Pick<MessageRow, 'id' | 'lead_id'> | undefined;
    if (!this.postgres) {
      profile = await repo.findProfileForUpdate(trx, integration.id, incoming.sender.socialId);
      existing = await repo.findMessageByExternalId(trx, integration.id, incoming.externalId);
    } else {
      // PostgreSQL: each statement is a round trip; the profile and the redelivery check are one.
      const found = await repo.findProfileForUpdateAndDuplicate(trx, integration.id, incoming.sender.socialId, incoming.externalId);
      profile = found?.profile;
      existing = found ? found.duplicate : await repo.findMessageByExternalId(trx, integration.id, incoming.externalId);
    }
    if (existing) {
      return { messageId: existing.id, leadId: existing.lead_id, isNewLead: false, isNewCustomer: false, duplicate: true };
    }

    let isNewCustomer = false;
    if (!profile) {
      profile = await this.createCustomer(trx, integration, incoming.sender, now);
      isNewCustomer = true;
    } else {
      profile = await this.refreshProfile(trx, profile, incoming);
      if (incoming.sender.phone !== undefined) await this.fillPhone(trx, integration, profile, incoming.sender, now);
    }

    const source = await this.findOrCreateSource(trx, integration, profile, incoming, now);

    let lead = isNewCustomer ? undefined : await repo.latestLead(trx, profile.customer_id, integration.id);
    const isNewLead = !joinsLatestLead(lead);
    if (isNewLead) {
      lead = await repo.insertInboxLead(trx, {
        accountId,
        integrationId: integration.id,
        customerId: profile.customer_id,
        at: incoming.datetime,
        now,
      });
    }
    const current = lead as LeadRow;

    const quoted = incoming.replyToExternalId
      ? await repo.findMessageByExternalId(trx, integration.id, incoming.replyToExternalId)
      : undefined;
    const replyTo = quoted ? replySnapshot(quoted, integration, await repo.findProfile(trx, quoted.profile_id)) : null;

    const { message, lead: updated } = await this.storeMessage(
      trx,
      incomingMessageValues(
        integration,
        { leadId: current.id, sourceId: source.id, profileId: profile.id },
        incoming,
        replyTo ? JSON.stringify(replyTo) : null,
      ),
      current,
      (messageId) => ({ ...afterIncoming(current, messageId, incoming.datetime), updated_at: now }),
    );

    if (isNewCustomer) await this.recordCustomerCreated(trx, profile, now);
    if (isNewLead) {
      await recordEvent(
        trx,
        { accountId, type: 'lead.created', leadId: updated.id, payload: { leadId: updated.id, lead: presentLead(updated) } },
        now,
      );
    }
    await recordEvent(
      trx,
      {
        accountId,
        type: 'message.incoming',
        leadId: updated.id,
        payload: { leadId: updated.id, isNewLead, isNewCustomer, message: presentHistoryMessage(message, source, integration, profile) },
      },
      now,
    );
    return { messageId: message.id, leadId: updated.id, isNewLead, isNewCustomer, duplicate: false };
  }

  /**
   * Stores a message and moves its lead's message-fed fields (`fields` of the new message's id):
   * two statements on SQLite, one round trip on PostgreSQL.
   */
  private async storeMessage(
    trx: Executor,
    values: Parameters<typeof repo.insertMessage>[1],
    lead: LeadRow,
    fields: (messageId: number) => Parameters<typeof repo.updateMessageFed>[2],
  ): Promise<{ message: MessageRow; lead: LeadRow }> {
    if (this.postgres) return repo.insertMessageFeedingLead(trx, values, lead, fields);
    const message = await repo.insertMessage(trx, values);
    return { message, lead: await repo.updateMessageFed(trx, lead, fields(message.id)) };
  }

  /**
   * Stores messages a channel accepted for a lead (one per provider id), moves the lead's
   * message-fed fields, and records `message.outgoing` for each, in the caller's transaction.
   */
  async recordOutgoing(
    trx: Executor,
    ctx: {
      integration: IntegrationRow;
      source: SourceRow;
      lead: LeadRow;
      userId: number | null;
      /** For the events of a first contact (write first): the lead or customer was just created. */
      isNewLead?: boolean;
      isNewCustomer?: boolean;
    },
    records: OutgoingRecord[],
  ): Promise<HistoryMessage[]> {
    const now = this.deps.clock.now();
    const { integration, source, userId } = ctx;
    let lead = ctx.lead;
    const out: HistoryMessage[] = [];
    for (const record of records) {
      const replyTo = record.replyTo
        ? replySnapshot(record.replyTo, integration, await repo.findProfile(trx, record.replyTo.profile_id))
        : null;
      const before = lead;
      const stored = await this.storeMessage(
        trx,
        outgoingMessageValues(
          integration,
          { leadId: lead.id, sourceId: source.id, userId },
          record,
          replyTo ? JSON.stringify(replyTo) : null,
        ),
        before,
        (messageId) => ({ ...afterOutgoing(before, messageId, record.at, isAutomationReply(userId, record.customId)), updated_at: now }),
      );
      const message = stored.message;
      lead = stored.lead;
      // The provider may have reported on the message before it was stored here.
      const reported = await applyHeldStatuses(trx, integration, message);
      const history = presentHistoryMessage(reported ?? message, source, integration, undefined);
      await recordEvent(trx, outgoingEvent(integration, lead.id, history, ctx), now);
      if (reported) await recordStatusEvent(trx, integration, reported, source, now);
      out.push(history);
    }
    return out;
  }

  /**
   * Stores the messages a channel accepted for a lead (a send), committed when it returns, its
   * send key (`customId`) released with them. PostgreSQL: the sends of a moment share a batch,
   * one statement (outgoing-batch.ts; docs/performance.md).
   */
  async storeOutgoing(unit: OutgoingUnit): Promise<HistoryMessage[]> {
    return this.outgoing ? this.outgoing.run(unit) : this.storeOutgoingAlone(unit);
  }

  /** One send's messages in a transaction of their own. */
  private async storeOutgoingAlone(unit: OutgoingUnit): Promise<HistoryMessage[]> {
    // Key look-ups only: on PostgreSQL its statements keep their plans (database.ts).
    return keyedTransaction(this.deps.db.kysely, async (trx) => (await this.recordOutgoingBatch(trx, [unit]))[0]);
  }

  /**
   * Locks each unit's lead and stores its messages as {@link recordOutgoing} does, in the caller's
   * transaction: on PostgreSQL all of them in two statements (`outgoingBatchIn`), on SQLite one
   * after another.
   */
  async recordOutgoingBatch(trx: Executor, units: OutgoingUnit[]): Promise<HistoryMessage[][]> {
    const one = async (t: Executor, u: OutgoingUnit) =>
      this.recordOutgoing(t, { ...u, lead: await lockLead(t, this.postgres ? 'postgres' : 'sqlite', u.leadId) }, u.records);
    if (this.postgres) return outgoingBatchIn(trx, units, this.deps.clock.now(), one);
    const out: HistoryMessage[][] = [];
    for (const unit of units) {
      out.push(await one(trx, unit));
      if (unit.customId !== undefined) await releaseSendKey(trx, unit.leadId, unit.customId);
    }
    return out;
  }

  /**
   * PostgreSQL: a batch of sends in one statement (`storeSendsAtOnce`), or else in one
   * transaction (`outgoingBatchIn`). When it fails (one send's own error, a deadlock, a stale
   * statement after an upgrade), nothing of it is stored and each send is stored on its own, one
   * after another in the batch's order: one send's failure is its own.
   */
  private async outgoingBatch(batch: LaneBatch<OutgoingUnit>): Promise<Outcome<HistoryMessage[]>[]> {
    try {
      // The sends are taken once the connection is had, as an ingest batch takes its messages
      // after its begin: those queued meanwhile join this batch instead of waiting for the next.
      const results = await this.deps.db.kysely.connection().execute(async (conn) => {
        const units = batch.take();
        const atOnce = await storeSendsAtOnce(conn, units, this.deps.clock.now());
        return atOnce ?? (await keyedTransaction(conn, (trx) => this.recordOutgoingBatch(trx, units)));
      });
      this.writers.note(results.flatMap((messages) => messages.map((m) => Number(m.messageId))));
      return results.map((value) => ({ ok: true, value }));
    } catch (err) {
      const units = batch.take();
      if (units.length === 1) return [{ ok: false, error: err }];
      this.deps.log.debug({ err, sends: units.length }, 'send batch rolled back: its sends are stored one by one');
      return oneByOne(units, (u) => this.storeOutgoingAlone(u));
    }
  }

  /**
   * An outgoing message a channel reports that Parley did not send (Messenger's `is_echo`: someone
   * answering from the Page's own inbox): stored once by its provider id in the contact's
   * conversation. Parley's own sends were stored under the same id and are not stored again.
   */
  async recordEcho(
    integration: IntegrationRow,
    contact: { socialId: string; channelExternalId: string },
    record: OutgoingRecord & { externalId: string },
  ): Promise<{ duplicate: boolean }> {
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      if (await repo.findMessageByExternalId(trx, integration.id, record.externalId)) return { duplicate: true };
      const opened = await this.openOutgoingConversation(trx, integration, contact, record.at);
      const { source, lead, isNewLead, isNewCustomer } = opened;
      await this.recordOutgoing(trx, { integration, source, lead, userId: null, isNewLead, isNewCustomer }, [record]);
      return { duplicate: false };
    });
  }

  /**
   * The conversation an employee's first message to a contact goes to (write first): the contact's
   * profile, customer and channel are found or created, and the lead follows the same rule as an
   * incoming message (docs/api/leads.md: the latest lead when open or ignored, else a new inbox lead).
   * Records `customer.created` / `lead.created` for what it creates, in the caller's transaction;
   * the message itself is stored by {@link recordOutgoing}.
   */
  async openOutgoingConversation(
    trx: Executor,
    integration: IntegrationRow,
    contact: { socialId: string; channelExternalId: string; customerId?: number },
    at: number,
  ): Promise<{ profile: ProfileRow; source: SourceRow; lead: LeadRow; isNewCustomer: boolean; isNewLead: boolean }> {
    const now = this.deps.clock.now();
    const sender: SenderProfile = { socialId: contact.socialId };
    let profile = await repo.findProfileForUpdate(trx, integration.id, contact.socialId);
    // A customer already known by the contact's phone (write first, docs/api/search.md): the
    // contact becomes a profile of theirs.
    if (!profile && contact.customerId !== undefined) {
      profile = await repo.insertProfile(
        trx,
        newProfileValues(integration, contact.customerId, { ...sender, login: contact.socialId, name: contact.socialId }, now),
      );
    }
    const isNewCustomer = !profile;
    if (!profile) {
      profile = await this.createCustomer(trx, integration, { ...sender, login: contact.socialId, name: contact.socialId }, now);
      await this.recordCustomerCreated(trx, profile, now);
    }
    const source = await this.findOrCreateSource(
      trx,
      integration,
      profile,
      { sender, channel: { externalId: contact.channelExternalId, type: 'message' } },
      now,
    );
    let lead = isNewCustomer ? undefined : await repo.latestLead(trx, profile.customer_id, integration.id);
    const isNewLead = !joinsLatestLead(lead);
    if (isNewLead) {
      lead = await repo.insertInboxLead(trx, {
        accountId: integration.account_id,
        integrationId: integration.id,
        customerId: profile.customer_id,
        at,
        now,
      });
      await recordEvent(
        trx,
        { accountId: integration.account_id, type: 'lead.created', leadId: lead.id, payload: { leadId: lead.id, lead: presentLead(lead) } },
        now,
      );
    }
    return { profile, source, lead: lead as LeadRow, isNewCustomer, isNewLead };
  }

  private async recordCustomerCreated(trx: Executor, profile: ProfileRow, now: number): Promise<void> {
    const customer = await findCustomerById(trx, profile.customer_id);
    await recordEvent(
      trx,
      {
        accountId: customer.account_id,
        type: 'customer.created',
        payload: { customerId: customer.id, customer: customerView(customer, [profile]) },
      },
      now,
    );
  }

  private async createCustomer(trx: Executor, integration: IntegrationRow, s: SenderProfile, now: number): Promise<ProfileRow> {
    const customer = await insertCustomer(trx, newCustomerValues(integration, s, now));
    return repo.insertProfile(trx, newProfileValues(integration, customer.id, s, now));
  }

  /**
   * A phone the sender reported of themselves (a Telegram contact share) becomes its customer's when
   * the customer has none; one it already has is kept (the employee's or the customer's own word).
   */
  private async fillPhone(trx: Executor, integration: IntegrationRow, profile: ProfileRow, s: SenderProfile, now: number): Promise<void> {
    const phone = senderPhone(integration, s);
    if (!phone) return;
    const customer = await fillEmptyPhone(trx, profile.customer_id, phone, now);
    if (!customer) return;
    await recordEvent(
      trx,
      {
        accountId: customer.account_id,
        type: 'customer.changed',
        payload: { customerId: customer.id, customer: customerView(customer, await listProfiles(trx, customer.account_id, customer.id)) },
      },
      now,
    );
  }

  /** Keeps the profile's name, login and avatar as the provider last reported them. */
  private async refreshProfile(trx: Executor, profile: ProfileRow, incoming: IncomingMessage): Promise<ProfileRow> {
    const patch = profilePatch(profile, incoming.sender);
    if (!Object.keys(patch).length) return profile;
    return repo.updateProfileRow(trx, profile.id, patch);
  }

  private async findOrCreateSource(
    trx: Executor,
    integration: IntegrationRow,
    profile: ProfileRow,
    incoming: Pick<IncomingMessage, 'channel' | 'sender'>,
    now: number,
  ): Promise<SourceRow> {
    const ch = incoming.channel;
    const found = await repo.findSource(trx, integration.id, ch.type, ch.externalId);
    if (found) {
      const expiresAt = movedExpiry(ch, found);
      return expiresAt === undefined ? found : repo.setSourceExpiry(trx, found.id, expiresAt);
    }
    return repo.insertSource(trx, newSourceValues(integration, profile.customer_id, incoming, now));
  }
}

/** Adapter output is still input: refuse what the integration type cannot carry, and absurd sizes. */
/**
 * The message with NUL characters removed from every text in it. Providers do send them (a
 * customer can type one); PostgreSQL cannot store them in text columns, and a channel's webhook
 * must not fail, and so have the provider give up on the message, for one invisible character.
 * Returns the same object when there is none (the common case allocates nothing).
 */
export function withoutNul<T>(value: T): T {
  if (typeof value === 'string') return (value.includes('\u0000') ? value.replaceAll('\u0000', '') : value) as T;
  if (Array.isArray(value)) {
    const items = value.map(withoutNul);
    return (items.some((item, i) => item !== value[i]) ? items : value) as T;
  }
  if (value && typeof value === 'object') {
    let copy: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const clean = withoutNul(item);
      if (clean !== item) {
        copy ??= { ...(value as Record<string, unknown>) };
        copy[key] = clean;
      }
    }
    return (copy ?? value) as T;
  }
  return value;
}

function validateIncoming(integration: IntegrationRow, incoming: IncomingMessage): void {
  const info = integrationTypeInfo(integration.type);
  if (!info?.sourceTypes.includes(incoming.channel.type)) {
    throw invalid(`Channels of type ${incoming.channel.type} do not exist for ${integration.type}`);
  }
  if (!incoming.externalId || !incoming.sender.socialId || !incoming.channel.externalId) {
    throw invalid('Incoming message without external ids');
  }
  if ((incoming.text ?? '').length > MAX_TEXT) throw invalid('Message text is too long');
  if (!Number.isFinite(incoming.datetime)) throw invalid('Message time is not a number');
}
