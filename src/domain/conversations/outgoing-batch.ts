import type { Executor } from '../../db/database.js';
import type { IntegrationRow, LeadRow, MessageRow, SourceRow } from '../../db/schema.js';
import { EVENT_VERSION_TRAITS } from '../../events/event-versions.js';
import { eventsInserted, eventPayloadText, eventsRecorded, type NewEvent } from '../../events/outbox.js';
import * as repo from './conversations.repo.js';
import { outgoingMessageValues } from './conversation-rows.js';
import { presentHistoryMessage, type HistoryMessage } from './history-message.js';
import { releaseSendKey } from '../messaging/send-keys.repo.js';
import { afterOutgoing, isAutomationReply } from './lead-lifecycle.js';
import { leadUpdate } from './ingest-batch.js';
import type { OutgoingRecord } from './conversations.types.js';

/** One send's messages to store: what the channel accepted for the lead `leadId` on `source`. */
export interface OutgoingUnit {
  integration: IntegrationRow;
  source: SourceRow;
  leadId: number;
  userId: number | null;
  records: OutgoingRecord[];
  /**
   * The `customId` of the send: its key (messaging/send-keys.repo.ts) is released as the messages
   * are stored, atomically with them.
   */
  customId?: string;
}

/** `message.outgoing` for a stored message. */
export function outgoingEvent(
  integration: IntegrationRow,
  leadId: number,
  message: HistoryMessage,
  first: { isNewLead?: boolean; isNewCustomer?: boolean },
): NewEvent {
  return {
    accountId: integration.account_id,
    type: 'message.outgoing',
    leadId,
    payload: { leadId, isNewLead: first.isNewLead ?? false, isNewCustomer: first.isNewCustomer ?? false, message },
  };
}

const heldKey = (integrationId: number, externalId: string) => `${integrationId}\u0000${externalId}`;

/**
 * PostgreSQL: the messages of several sends stored in the caller's transaction, in two statements
 * besides its begin and commit whatever their number, and one per send key released
 * (docs/performance.md). A batch goes this way when `storeSendsAtOnce`
 * cannot store it:
 *
 * 1. The sends' leads are locked in id order, with ids taken for every message and the delivery
 *    reports already held for their provider ids looked up (delivery-status.service.ts).
 * 2. The messages of the usual send (no message quoted, no report held for it) are stored in one
 *    statement with their leads' message-fed fields and their events, as the ingest batch stores
 *    incoming messages (`storeIncomingBatch`), then fanned out to the account's webhooks.
 * 3. Every other send goes through `one` after them, in this transaction and in batch order: it
 *    reads its lead as the batch left it.
 *
 * Then each send's key is released, in batch order. The outcome is that of storing the sends one
 * after another, those of step 3 last. Any error fails the whole transaction; the caller then
 * stores each send on its own. Two send batches lock their common leads in the same order; an
 * ingest batch updating two of a send batch's leads at once may still meet it in a deadlock, which
 * PostgreSQL breaks by failing one of them, whose messages are then stored one by one.
 */
export async function outgoingBatchIn(
  trx: Executor,
  units: OutgoingUnit[],
  now: number,
  one: (trx: Executor, unit: OutgoingUnit) => Promise<HistoryMessage[]>,
): Promise<HistoryMessage[][]> {
  const pairs = units.flatMap((u) =>
    u.records.flatMap((r) => (r.externalId === null ? [] : [{ id: u.integration.id, ext: r.externalId }])),
  );
  const locks = await repo.lockLeadsForOutgoing(trx, {
    leadIds: [...new Set(units.map((u) => u.leadId))].sort((a, b) => a - b),
    integrationIds: pairs.map((p) => p.id),
    externalIds: pairs.map((p) => p.ext),
    count: units.reduce((n, u) => n + u.records.length, 0),
  });
  const leads = new Map(locks.leads.map((l) => [l.id, l]));
  const held = new Set(locks.held.map(([id, ext]) => heldKey(id, ext)));

  const results = new Array<HistoryMessage[] | undefined>(units.length);
  const long: number[] = [];
  const messages: MessageRow[] = [];
  const events: NewEvent[] = [];
  const touched = new Set<number>();
  let taken = 0;
  units.forEach((unit, index) => {
    const { integration, source, userId, records } = unit;
    const ids = locks.messageIds.slice(taken, taken + records.length);
    taken += records.length;
    let lead = leads.get(unit.leadId);
    if (!lead) throw new Error(`lead ${unit.leadId} not found`);
    if (records.some((r) => r.replyTo || (r.externalId !== null && held.has(heldKey(integration.id, r.externalId))))) {
      long.push(index);
      return;
    }
    const out: HistoryMessage[] = [];
    for (const [i, record] of records.entries()) {
      const message: MessageRow = {
        id: ids[i] as number,
        ...outgoingMessageValues(integration, { leadId: lead.id, sourceId: source.id, userId }, record, null),
        delivery_status: null,
        delivery_error: null,
      };
      lead = { ...lead, ...afterOutgoing(lead, message.id, record.at, isAutomationReply(userId, record.customId)), updated_at: now };
      const history = presentHistoryMessage(message, source, integration, undefined);
      messages.push(message);
      events.push(outgoingEvent(integration, lead.id, history, {}));
      out.push(history);
    }
    leads.set(lead.id, lead);
    touched.add(lead.id);
    results[index] = out;
  });

  if (messages.length) {
    const leadUpdates = [...touched].map((id) => leadUpdate(leads.get(id) as LeadRow));
    const batch: repo.IncomingBatch = {
      customers: [],
      profiles: [],
      sources: [],
      leads: [],
      messages,
      leadUpdates,
      deadlines: [],
      events: events.map((e) => ({ accountId: e.accountId, type: e.type, leadId: e.leadId ?? null, payload: eventPayloadText(e) })),
    };
    const { eventIds, hooks } = await repo.storeIncomingBatch(trx, batch, now);
    await eventsInserted(trx, events, eventIds, hooks, now);
  }
  for (const index of long) results[index] = await one(trx, units[index]);
  for (const unit of units) if (unit.customId !== undefined) await releaseSendKey(trx, unit.leadId, unit.customId);
  return results as HistoryMessage[][];
}

/** API versions whose webhooks do not receive `message.outgoing` (events/event-versions.ts). */
const NO_OUTGOING = Object.entries(EVENT_VERSION_TRAITS).flatMap(([version, traits]) => (traits.outgoingMessage ? [] : [version]));

/** Where a `message.outgoing` payload's message id goes: the message's first key, its value empty. */
const ID_MARK = '"message":{"messageId":"';

/**
 * PostgreSQL: a batch of sends stored by one statement outside any transaction
 * (`repo.storeSends`, migration 0076-send-batch; docs/performance.md): one round trip where `outgoingBatchIn` in a transaction takes four. The statement stores
 * what `outgoingBatchIn` stores for a send quoting no message, and releases the sends' keys.
 * Answers undefined, having stored nothing, when a send quotes a message (its snapshot needs the
 * quoted message's profile) or a delivery report is held for one of the messages: the caller then
 * stores the batch with `outgoingBatchIn`, which applies the report. Fails, having stored nothing,
 * when a lead does not exist.
 */
export async function storeSendsAtOnce(db: Executor, units: OutgoingUnit[], now: number): Promise<HistoryMessage[][] | undefined> {
  if (units.some((u) => u.records.some((r) => r.replyTo))) return undefined;
  const rows: repo.SendsRows = { messages: [], payloads: [], keys: [], noOutgoing: NO_OUTGOING };
  const results = units.map(({ integration, source, leadId, userId, records, customId }) => {
    if (customId !== undefined) rows.keys.push({ leadId, customId });
    return records.map((record) => {
      const values = outgoingMessageValues(integration, { leadId, sourceId: source.id, userId }, record, null);
      const history = presentHistoryMessage(
        { id: 0, ...values, delivery_status: null, delivery_error: null },
        source,
        integration,
        undefined,
      );
      history.messageId = '';
      // The payload's text with the id left out: the statement puts it in.
      const text = eventPayloadText(outgoingEvent(integration, leadId, history, {}));
      const at = text.indexOf(ID_MARK);
      if (at < 0) throw new Error('a message.outgoing payload without its message id first');
      rows.messages.push(values);
      rows.payloads.push({ head: text.slice(0, at + ID_MARK.length), tail: text.slice(at + ID_MARK.length) });
      return history;
    });
  });
  const stored = await repo.storeSends(db, rows, now);
  if (!stored.length) return undefined;
  const histories = results.flat();
  if (stored.length !== histories.length) throw new Error('a batch of sends was not stored whole');
  for (const [i, { messageId }] of stored.entries()) histories[i].messageId = String(messageId);
  eventsRecorded(
    stored.map((s) => s.eventId),
    stored.map((s) => s.deliveries),
  );
  return results;
}
