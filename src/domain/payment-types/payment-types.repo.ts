import type { Executor } from '../../db/database.js';
import type { PaymentTypeRow } from './payment-types.types.js';

export async function listPaymentTypes(db: Executor, accountId: number): Promise<PaymentTypeRow[]> {
  return db.selectFrom('payment_types').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

/** Scoped by account: an id of another account finds nothing. */
export async function findPaymentType(db: Executor, accountId: number, id: number): Promise<PaymentTypeRow | undefined> {
  return db.selectFrom('payment_types').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findPaymentTypeByTitle(db: Executor, accountId: number, title: string): Promise<PaymentTypeRow | undefined> {
  return db.selectFrom('payment_types').selectAll().where('title', '=', title).where('account_id', '=', accountId).executeTakeFirst();
}

export async function insertPaymentType(db: Executor, accountId: number, title: string): Promise<PaymentTypeRow> {
  return db.insertInto('payment_types').values({ account_id: accountId, title }).returningAll().executeTakeFirstOrThrow();
}

export async function updatePaymentType(db: Executor, accountId: number, id: number, title: string): Promise<void> {
  await db.updateTable('payment_types').set({ title }).where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** Clears the payment type from the account's leads, then deletes it (explicitly, whatever the FK does). */
export async function deletePaymentType(db: Executor, accountId: number, id: number, now: number): Promise<void> {
  await db
    .updateTable('leads')
    .set({ payment_type_id: null, updated_at: now })
    .where('account_id', '=', accountId)
    .where('payment_type_id', '=', id)
    .execute();
  await db.deleteFrom('payment_types').where('id', '=', id).where('account_id', '=', accountId).execute();
}
