import { EventEmitter } from 'node:events';
import { dialectOf, type Executor } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { fanOutAll, fanOutEvent, type ActiveWebhook, type FannedEvent } from './fan-out.js';
import { isInternalEvent, type EventType, type InternalEventType } from './event-types.js';

/**
 * In-process nudge: 'recorded' is emitted when an event is written (before its transaction
 * commits). Listeners (events/wakeup.ts: webhook worker, realtime hub, visitor and push consumers) re-read the events/deliveries tables soon
 * after; they never trust the nudge for content. On PostgreSQL the process's OutboxNotifier
 * (events/outbox-notifier.ts) turns these nudges into NOTIFYs for the other processes, outside
 * the writing transactions.
 */
export const outboxSignal = new EventEmitter().setMaxListeners(0);
/** Some event was recorded: the outbox readers look. */
export const OUTBOX_CHANNEL = 'parley_outbox';
/** Some event made webhook deliveries: the delivery workers look. */
export const DELIVERIES_CHANNEL = 'parley_deliveries';

export interface NewEvent {
  accountId: number;
  type: EventType | InternalEventType;
  /** The lead the event concerns: deliveries of one lead keep their order per endpoint. */
  leadId?: number | null;
  /**
   * The v1.3 payload without `type` and `accountId` (added here). Webhook and realtime serializers
   * derive older versions' shapes from it.
   */
  payload: Record<string, unknown>;
}

const insertEvent = prepared((db, p: { accountId: number; type: string; leadId: number | null; payload: string; now: number }) =>
  db
    .insertInto('events')
    .values({ account_id: p.accountId, type: p.type, lead_id: p.leadId, payload: p.payload, created_at: p.now })
    .returning('id'),
);

/**
 * PostgreSQL, one round trip: the event's insert and its account's active webhooks (one row per
 * webhook, or one row without a webhook). A message's ingest records one or two events; reading
 * the webhooks with the insert saves a round trip each.
 */
const insertEventReadingWebhooks = prepared(
  (db, p: { accountId: number; type: string; leadId: number | null; payload: string; now: number }) =>
    db
      .with('e', (w) =>
        w
          .insertInto('events')
          .values({ account_id: p.accountId, type: p.type, lead_id: p.leadId, payload: p.payload, created_at: p.now })
          .returning('id'),
      )
      .selectFrom('e')
      .leftJoin('webhooks as w', (join) => join.on('w.account_id', '=', p.accountId).on('w.status', '=', 1))
      .select(['e.id', 'w.id as webhook_id', 'w.events', 'w.api_version']),
);

/**
 * Records a domain event in the outbox. Call it with the transaction of the change that caused the
 * event, and from exactly one place per change: the event exists if and only if the change does.
 */
export async function recordEvent(trx: Executor, event: NewEvent, now: number): Promise<number> {
  const values = { accountId: event.accountId, type: event.type, leadId: event.leadId ?? null, payload: eventPayloadText(event), now };
  // Webhook deliveries are the outbox's rows for the webhook consumer (webhooks/ reads them after
  // commit), written in the same transaction: durable exactly when the event is.
  if (dialectOf(trx) === 'postgres') {
    const rows = await insertEventReadingWebhooks(trx, values);
    if (!rows[0]) throw new Error('insert into events returned no row');
    const hooks = rows.flatMap((r) =>
      r.webhook_id === null ? [] : [{ id: r.webhook_id, events: r.events, api_version: r.api_version as string }],
    );
    await eventsInserted(trx, [event], [rows[0].id], [hooks], now);
    return rows[0].id;
  }
  const [row] = await insertEvent(trx, values);
  if (!row) throw new Error('insert into events returned no row');
  const internal = isInternalEvent(event.type);
  const deliveries = internal ? 0 : await fanOutEvent(trx, fanned(event, row.id), now);
  outboxSignal.emit('recorded', row.id, deliveries);
  return row.id;
}

/** The stored text of an event's payload: the v1.3 payload with its `type` and `accountId`. */
export function eventPayloadText(event: NewEvent): string {
  return JSON.stringify({ type: event.type, accountId: event.accountId, ...event.payload });
}

function fanned(event: NewEvent, id: number): FannedEvent {
  return { id, accountId: event.accountId, type: event.type, leadId: event.leadId ?? null };
}

/**
 * The rest of {@link recordEvent} after the insert of events that also read their accounts' active
 * webhooks (PostgreSQL: one event's insert, or an ingest or send batch's; ids and webhooks by
 * event): their deliveries in one statement, in the caller's transaction, and the in-process nudges.
 */
export async function eventsInserted(
  trx: Executor,
  events: NewEvent[],
  ids: number[],
  hooks: ActiveWebhook[][],
  now: number,
): Promise<void> {
  const fannedOut = events.map((event, i) => ({ event: fanned(event, ids[i]), hooks: isInternalEvent(event.type) ? [] : hooks[i] }));
  eventsRecorded(ids, await fanOutAll(trx, fannedOut, now));
}

/**
 * The in-process nudge of events written together (ids) with their deliveries' counts (by event):
 * one for the lot, naming the newest id and the deliveries of all (a count of 0 lets the webhook
 * worker sleep through events no endpoint wants: most, often all). Every listener only wakes a
 * reader, which then reads whatever is committed; a nudge per event woke each reader and armed its
 * follow-up timer (events/wakeup.ts) once per message of a send or ingest batch
 * (docs/performance.md).
 */
export function eventsRecorded(ids: number[], deliveries: number[]): void {
  if (!ids.length) return;
  outboxSignal.emit(
    'recorded',
    Math.max(...ids),
    deliveries.reduce((sum, n) => sum + n, 0),
  );
}
