import type { Executor } from '../db/database.js';

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

/**
 * Records a domain event in the outbox. Call it with the transaction of the change that caused the
 * event, and from exactly one place per change: the event exists if and only if the change does.
 */
export async function recordEvent(trx: Executor, event: NewEvent, now: number): Promise<number> {
  const payload = { type: event.type, accountId: event.accountId, ...event.payload };
  const row = await trx
    .insertInto('events')
    .values({
      account_id: event.accountId,
      type: event.type,
      lead_id: event.leadId ?? null,
      payload: JSON.stringify(payload),
      created_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
