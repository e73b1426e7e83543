import type { Insertable, Updateable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { CustomerRow, CustomersTable, ProfileRow, ProfilesTable } from '../../db/schema.js';

/** The customer's profiles, oldest first. */
export async function listProfiles(db: Executor, accountId: number, customerId: number): Promise<ProfileRow[]> {
  return db
    .selectFrom('profiles')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('account_id', '=', accountId)
    .orderBy('id')
    .execute();
}

/**
 * The one writer of `customers` (test/architecture.test.ts keeps it so): every module that makes or
 * changes a customer goes through these functions, inside its own transaction when it records an
 * event with the change.
 */
export async function insertCustomer(db: Executor, values: Insertable<CustomersTable>): Promise<CustomerRow> {
  return db.insertInto('customers').values(values).returningAll().executeTakeFirstOrThrow();
}

export async function findCustomerById(db: Executor, id: number): Promise<CustomerRow> {
  return db.selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/**
 * Sets the e-mail and phone of a customer that has neither yet (a widget visitor's pre-chat form
 * filling a new customer); answers the changed customer, or undefined when it already had contacts.
 */
export async function fillEmptyContacts(
  db: Executor,
  id: number,
  contacts: { email: string | null; phone: string | null; phoneAsTyped: string | null },
  now: number,
): Promise<CustomerRow | undefined> {
  return db
    .updateTable('customers')
    .set({ email: contacts.email, phone: contacts.phone, phone_as_typed: contacts.phoneAsTyped, updated_at: now })
    .where('id', '=', id)
    .where('email', 'is', null)
    .where('phone', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function updateCustomer(db: Executor, accountId: number, id: number, patch: Updateable<CustomersTable>): Promise<CustomerRow> {
  return db
    .updateTable('customers')
    .set(patch)
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateProfile(db: Executor, accountId: number, id: number, patch: Updateable<ProfilesTable>): Promise<void> {
  await db.updateTable('profiles').set(patch).where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** Removes a customer that no longer has profiles, channels or leads (one person merged into another). */
export async function deleteCustomer(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('customers').where('account_id', '=', accountId).where('id', '=', id).execute();
}
