import { EventEmitter } from 'node:events';
import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
import { prepared } from '../db/prepared.js';
import { fanOutEvent } from '../webhooks/fan-out.js';

/**
 * In-process nudge: 'recorded' is emitted when an event is written (before its transaction
 * commits). Listeners (webhook worker, realtime hub) re-read the events/deliveries tables soon
 * after; they never trust the nudge for content. On PostgreSQL recordEvent also issues
 * `pg_notify(OUTBOX_CHANNEL, id)`, which the server delivers on commit, to every process.
 */
export const outboxSignal = new EventEmitter().setMaxListeners(0);
export const OUTBOX_CHANNEL = 'parley_outbox';

/** The event catalogue of decisions.md §7. */
export const EVENT_TYPES = [
  'message.incoming',
  'message.outgoing',
  'lead.created',
  'lead.changed',
  'lead.changed.status',
  'customer.created',
  'customer.changed',
  'integration.created',
  'integration.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  accountId: number;
  type: EventType;
  /** The lead the event concerns: deliveries of one lead keep their order per endpoint. */
  leadId?: number | null;
  /**
   * The v1.3 payload without `type` and `accountId` (added here). Webhook and realtime serializers
   * derive older versions' shapes from it.
   */
  payload: Record<string, unknown>;
}

const insertEvent = prepared((db, arg) =>
  db
    .insertInto('events')
    .values({ account_id: arg(0), type: arg(1), lead_id: arg(2), payload: arg(3), created_at: arg(4) })
    .returning('id'),
);

/**
 * Records a domain event in the outbox. Call it with the transaction of the change that caused the
 * event, and from exactly one place per change: the event exists if and only if the change does.
 */
export async function recordEvent(trx: Executor, event: NewEvent, now: number): Promise<number> {
  const payload = { type: event.type, accountId: event.accountId, ...event.payload };
  const [row] = await insertEvent(trx, event.accountId, event.type, event.leadId ?? null, JSON.stringify(payload), now);
  const id = row!.id;
  // Webhook deliveries are written in the same transaction: durable exactly when the event is.
  const deliveries = await fanOutEvent(trx, { id, accountId: event.accountId, type: event.type, leadId: event.leadId ?? null }, now);
  if (dialectOf(trx) === 'postgres') await sql`select pg_notify(${OUTBOX_CHANNEL}, ${String(id)})`.execute(trx);
  // The count lets the webhook worker sleep through events no endpoint wants (most, often all).
  outboxSignal.emit('recorded', id, deliveries);
  return id;
}
