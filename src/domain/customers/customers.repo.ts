import type { Insertable, Updateable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { CustomerRow, CustomersTable, LeadRow, ProfileRow, ProfilesTable } from '../../db/schema.js';

/** The customer's profiles, oldest first. */
export async function listProfiles(db: Executor, accountId: number, customerId: number): Promise<ProfileRow[]> {
  return listProfilesOf(db, accountId, [customerId]);
}

/** The profiles of several customers of one account, oldest first. */
export async function listProfilesOf(db: Executor, accountId: number, customerIds: number[]): Promise<ProfileRow[]> {
  if (!customerIds.length) return [];
  return db
    .selectFrom('profiles')
    .selectAll()
    .where('customer_id', 'in', customerIds)
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

/** Sets the phone of a customer that has none; answers the changed customer, or undefined when it had one. */
export async function fillEmptyPhone(
  db: Executor,
  id: number,
  phone: { phone: string; asTyped: string },
  now: number,
): Promise<CustomerRow | undefined> {
  return db
    .updateTable('customers')
    .set({ phone: phone.phone, phone_as_typed: phone.asTyped, updated_at: now })
    .where('id', '=', id)
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
async function deleteCustomer(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('customers').where('account_id', '=', accountId).where('id', '=', id).execute();
}

/** How many other customers with the same phone the customer card lists at most. */
const SAME_PHONE_LIMIT = 20;

/**
 * The account's other customers with this stored phone (E.164 when it parsed, docs/api/search.md
 * "Phones"), oldest first: whom the customer card offers to merge. Migration 0106's index
 * `customers (account_id, phone)` finds them.
 */
export async function customersWithPhone(db: Executor, accountId: number, phone: string, except: number): Promise<CustomerRow[]> {
  return db
    .selectFrom('customers')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('phone', '=', phone)
    .where('id', '!=', except)
    .orderBy('id')
    .limit(SAME_PHONE_LIMIT)
    .execute();
}

/** The fields a merge fills on the kept customer when they are empty there (docs/api/resources.md "Merging customers"). */
const FILLED_BY_MERGE = ['name', 'login', 'avatar', 'email', 'address'] as const;

/**
 * One person known as two customers: `from`'s profiles, channels and leads move to `into`, the
 * fields `into` has empty are filled from `from` (its phone with the phone as typed), and `from`
 * goes. Answers the kept customer and the leads that moved, as they are now. Runs in the caller's
 * transaction.
 */
export async function mergeCustomer(
  db: Executor,
  accountId: number,
  from: number,
  into: number,
  now: number,
): Promise<{ customer: CustomerRow; movedLeads: LeadRow[] }> {
  const [source, target] = await Promise.all([findCustomerById(db, from), findCustomerById(db, into)]);
  const fill: Updateable<CustomersTable> = {};
  for (const key of FILLED_BY_MERGE) {
    if (!target[key] && source[key]) fill[key] = source[key];
  }
  if (target.phone === null && source.phone !== null) {
    fill.phone = source.phone;
    fill.phone_as_typed = source.phone_as_typed;
  }
  for (const table of ['profiles', 'sources'] as const) {
    await db.updateTable(table).set({ customer_id: into }).where('account_id', '=', accountId).where('customer_id', '=', from).execute();
  }
  const movedLeads = await db
    .updateTable('leads')
    .set({ customer_id: into })
    .where('account_id', '=', accountId)
    .where('customer_id', '=', from)
    .returningAll()
    .execute();
  await deleteCustomer(db, accountId, from);
  const customer = Object.keys(fill).length ? await updateCustomer(db, accountId, into, { ...fill, updated_at: now }) : target;
  return { customer, movedLeads: movedLeads.sort((a, b) => a.id - b.id) };
}
