import { sql } from 'kysely';
import { dialectOf, executeNamed, type Executor } from '../db/database.js';
import { bigintArray, textArray } from '../db/pg-arrays.js';
import { prepared } from '../db/prepared.js';
import { eventTraitsOf } from './event-versions.js';
import type { EventType } from './event-types.js';

/** What the fan-out needs to know of the event just written. */
export interface FannedEvent {
  id: number;
  accountId: number;
  type: string;
  leadId: number | null;
}

/**
 * Event types a webhook receives only when its `events` list names them (a webhook without a list
 * gets every other type). They were added after clients existed, so a webhook without a filter
 * keeps receiving exactly what it did: delivery statuses of outgoing messages, and internal notes
 * (employees' talk, not something an integration built before them should start receiving).
 */
export const OPT_IN_EVENT_TYPES: ReadonlySet<string> = new Set<EventType>(['message.status', 'lead.note.created', 'customer.merged']);

/** The `webhook-id` of an event's deliveries: one per event, the same on every retry. */
export function messageIdOf(eventId: number): string {
  return `msg_${eventId}`;
}

/**
 * Whether a webhook registered through `apiVersion` with filter `events` receives `type`. A send
 * batch's statement applies the same rule to `message.outgoing` in SQL (migration 0076-send-batch).
 */
export function webhookWants(apiVersion: string, events: string | null, type: string): boolean {
  if (type === 'message.outgoing' && !eventTraitsOf(apiVersion).outgoingMessage) return false;
  if (events === null) return !OPT_IN_EVENT_TYPES.has(type);
  const list: unknown = JSON.parse(events);
  return Array.isArray(list) && list.includes(type);
}

const activeWebhooks = prepared((db, p: { accountId: number }) =>
  db.selectFrom('webhooks').select(['id', 'events', 'api_version']).where('account_id', '=', p.accountId).where('status', '=', 1),
);

/**
 * The webhooks' share of the outbox. Writes one pending delivery per active webhook of the event's account that wants the event, in
 * the caller's transaction: the deliveries exist if and only if the event (and its change) does.
 * Returns how many were written.
 */
export async function fanOutEvent(trx: Executor, event: FannedEvent, now: number): Promise<number> {
  return (await fanOutAll(trx, [{ event, hooks: await activeWebhooks(trx, { accountId: event.accountId }) }], now))[0];
}

/** An active webhook of the event's account, as the fan-out reads it (or the event's insert read it). */
export type ActiveWebhook = { id: number; events: string | null; api_version: string };

/**
 * Writes the deliveries of several events (a batch's, with their accounts' active webhooks read
 * already) as {@link fanOutEvent} does, in one statement: on PostgreSQL a named one whose array
 * parameters take any number of rows (a statement per event was a round trip and a parse each:
 * docs/performance.md). Ids follow the events' order, which the worker's
 * per-lead ordering reads. Answers how many deliveries each event got.
 */
export async function fanOutAll(trx: Executor, events: { event: FannedEvent; hooks: ActiveWebhook[] }[], now: number): Promise<number[]> {
  const perEvent = events.map(({ event, hooks }) =>
    hooks
      .filter((w) => webhookWants(w.api_version, w.events, event.type))
      .map((w) => ({ webhook_id: w.id, event_id: event.id, message_id: messageIdOf(event.id), lead_id: event.leadId })),
  );
  const rows = perEvent.flat();
  if (!rows.length) return perEvent.map(() => 0);
  if (dialectOf(trx) === 'postgres') {
    const query = sql`insert into deliveries (webhook_id, event_id, message_id, lead_id, next_attempt_at, created_at)
      select d.webhook_id, d.event_id, d.message_id, d.lead_id, ${now}::bigint, ${now}::bigint
      from unnest(${bigintArray(rows.map((r) => r.webhook_id))}, ${bigintArray(rows.map((r) => r.event_id))},
        ${textArray(rows.map((r) => r.message_id))}, ${bigintArray(rows.map((r) => r.lead_id))})
        with ordinality as d(webhook_id, event_id, message_id, lead_id, ord)
      order by d.ord`.compile(trx);
    await executeNamed(trx, query);
  } else {
    // One statement text whatever the number of rows (the rows travel as one JSON parameter): a
    // multi-row VALUES was a new text, compiled by Kysely and prepared by SQLite, for every batch size.
    const json = JSON.stringify(rows.map((r) => [r.webhook_id, r.event_id, r.message_id, r.lead_id]));
    await sql`insert into deliveries (webhook_id, event_id, message_id, lead_id, next_attempt_at, created_at)
      select value ->> 0, value ->> 1, value ->> 2, value ->> 3, ${now}, ${now} from json_each(${json}) order by key`.execute(trx);
  }
  return perEvent.map((r) => r.length);
}
