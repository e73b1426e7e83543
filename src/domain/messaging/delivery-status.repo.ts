import type { Executor } from '../../db/database.js';
import type { MessageRow, SourceRow } from '../../db/schema.js';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../conversations/history-message.js';

/**
 * The statuses a message may be in for a report of `status` to move it: statuses only move
 * forward (sent -> delivered -> read), and `failed` ends a message that was not delivered. A late,
 * repeated or out-of-order report matches no row and changes nothing.
 */
const MAY_FOLLOW: Record<DeliveryStatus, readonly DeliveryStatus[]> = {
  sent: [],
  delivered: ['sent'],
  read: ['sent', 'delivered'],
  failed: ['sent'],
};

/** Held reports older than this are dropped: they describe messages Parley never stored. */
const HOLD_MS = 15 * 60 * 1000;

/**
 * Moves the outgoing message with this provider id to `status` when that is a step forward, in one
 * statement (two concurrent reports cannot both win); answers the changed row, or undefined.
 */
export async function advanceDeliveryStatus(
  db: Executor,
  integrationId: number,
  externalId: string,
  status: DeliveryStatus,
  error: string | null,
): Promise<MessageRow | undefined> {
  const from = MAY_FOLLOW[status];
  return db
    .updateTable('messages')
    .set({ delivery_status: status, delivery_error: error })
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', externalId)
    .where('incoming', '=', 0)
    .where((eb) =>
      from.length ? eb.or([eb('delivery_status', 'is', null), eb('delivery_status', 'in', from)]) : eb('delivery_status', 'is', null),
    )
    .returningAll()
    .executeTakeFirst();
}

export function outgoingMessage(db: Executor, integrationId: number, externalId: string): Promise<MessageRow | undefined> {
  return db
    .selectFrom('messages')
    .selectAll()
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', externalId)
    .where('incoming', '=', 0)
    .executeTakeFirst();
}

export async function outgoingExists(db: Executor, integrationId: number, externalId: string): Promise<boolean> {
  const row = await db
    .selectFrom('messages')
    .select('id')
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', externalId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Keeps a report of a message not stored yet (once per status), pruning the integration's stale ones. */
export async function holdDeliveryStatus(
  db: Executor,
  integrationId: number,
  externalId: string,
  status: DeliveryStatus,
  error: string | null,
  now: number,
): Promise<void> {
  await db
    .deleteFrom('held_delivery_statuses')
    .where('integration_id', '=', integrationId)
    .where('created_at', '<', now - HOLD_MS)
    .execute();
  await db
    .insertInto('held_delivery_statuses')
    .values({ integration_id: integrationId, external_id: externalId, status, error, created_at: now })
    .onConflict((oc) => oc.columns(['integration_id', 'external_id', 'status']).doNothing())
    .execute();
}

/** The reports held for a message just stored, in the order statuses move, and forgets them. */
export async function takeHeldDeliveryStatuses(
  db: Executor,
  integrationId: number,
  externalId: string,
): Promise<Array<{ status: DeliveryStatus; error: string | null }>> {
  const rows = await db
    .selectFrom('held_delivery_statuses')
    .select(['status', 'error'])
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', externalId)
    .execute();
  if (!rows.length) return [];
  await db.deleteFrom('held_delivery_statuses').where('integration_id', '=', integrationId).where('external_id', '=', externalId).execute();
  const rank = (s: string) => DELIVERY_STATUSES.indexOf(s as DeliveryStatus);
  return rows.map((r) => ({ status: r.status as DeliveryStatus, error: r.error })).sort((a, b) => rank(a.status) - rank(b.status));
}

export function sourceOf(db: Executor, message: Pick<MessageRow, 'source_id'>): Promise<SourceRow> {
  return db.selectFrom('sources').selectAll().where('id', '=', message.source_id).executeTakeFirstOrThrow();
}

/**
 * Provider ids of the outgoing messages of one channel sent at or before `watermark` (Unix ms) that
 * have not reached `status` yet: Messenger reports reads and deliveries as a watermark.
 */
export async function outgoingUpTo(
  db: Executor,
  integrationId: number,
  channelExternalId: string,
  watermark: number,
  status: DeliveryStatus,
): Promise<string[]> {
  const rows = await db
    .selectFrom('messages')
    .innerJoin('sources', 'sources.id', 'messages.source_id')
    .select('messages.external_id')
    .where('messages.integration_id', '=', integrationId)
    .where('sources.external_id', '=', channelExternalId)
    .where('messages.incoming', '=', 0)
    .where('messages.created_at', '<=', watermark)
    .where('messages.external_id', 'is not', null)
    .where((eb) => eb.or([eb('messages.delivery_status', 'is', null), eb('messages.delivery_status', 'in', MAY_FOLLOW[status])]))
    .orderBy('messages.id')
    .limit(500)
    .execute();
  return rows.flatMap((r) => (r.external_id ? [r.external_id] : []));
}
