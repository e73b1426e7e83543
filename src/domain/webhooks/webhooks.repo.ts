import type { Executor } from '../../db/database.js';
import type { DeliveryAttemptRow, DeliveryRow, WebhookRow, WebhooksTable } from '../../db/schema.js';
import type { Insertable, Updateable } from 'kysely';

export function listWebhooks(db: Executor, accountId: number): Promise<WebhookRow[]> {
  return db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

export function findWebhook(db: Executor, accountId: number, id: number): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function countWebhooks(db: Executor, accountId: number): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function urlTaken(db: Executor, accountId: number, url: string, exceptId?: number): Promise<boolean> {
  let q = db.selectFrom('webhooks').select('id').where('account_id', '=', accountId).where('url', '=', url);
  if (exceptId !== undefined) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

export function insertWebhook(db: Executor, row: Insertable<WebhooksTable>): Promise<WebhookRow> {
  return db.insertInto('webhooks').values(row).returningAll().executeTakeFirstOrThrow();
}

export function updateWebhook(
  db: Executor,
  accountId: number,
  id: number,
  patch: Updateable<WebhooksTable>,
): Promise<WebhookRow | undefined> {
  return db.updateTable('webhooks').set(patch).where('account_id', '=', accountId).where('id', '=', id).returningAll().executeTakeFirst();
}

export async function deleteWebhook(db: Executor, accountId: number, id: number): Promise<boolean> {
  const r = await db.deleteFrom('webhooks').where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) === 1;
}

export type DeliveryListRow = DeliveryRow & { type: string };

/** The webhook's most recent deliveries, newest first. */
export function listDeliveries(db: Executor, webhookId: number, limit: number, beforeId?: number): Promise<DeliveryListRow[]> {
  let q = db
    .selectFrom('deliveries')
    .innerJoin('events', 'events.id', 'deliveries.event_id')
    .selectAll('deliveries')
    .select('events.type')
    .where('deliveries.webhook_id', '=', webhookId);
  if (beforeId !== undefined) q = q.where('deliveries.id', '<', beforeId);
  return q.orderBy('deliveries.id', 'desc').limit(limit).execute();
}

export function attemptsOf(db: Executor, deliveryIds: number[]): Promise<DeliveryAttemptRow[]> {
  if (!deliveryIds.length) return Promise.resolve([]);
  return db.selectFrom('delivery_attempts').selectAll().where('delivery_id', 'in', deliveryIds).orderBy('id').execute();
}

/** Puts one delivery back in the queue, due now, with a fresh attempt budget; false when unknown. */
export async function requeueDelivery(db: Executor, webhookId: number, deliveryId: number, now: number): Promise<boolean> {
  const r = await db
    .updateTable('deliveries')
    .set({ status: 'pending', attempts: 0, next_attempt_at: now, lease_until: null, leased_by: null, delivered_at: null })
    .where('id', '=', deliveryId)
    .where('webhook_id', '=', webhookId)
    // Not while a worker holds it: that would send it twice at once.
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)]))
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export function findDelivery(db: Executor, webhookId: number, deliveryId: number): Promise<DeliveryRow | undefined> {
  return db.selectFrom('deliveries').selectAll().where('id', '=', deliveryId).where('webhook_id', '=', webhookId).executeTakeFirst();
}

/** Makes the webhook's waiting deliveries due now (when it is re-enabled). */
export async function resumeDeliveries(db: Executor, webhookId: number, now: number): Promise<void> {
  await db
    .updateTable('deliveries')
    .set({ next_attempt_at: now })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '>', now)
    .execute();
}
