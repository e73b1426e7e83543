import type { Updateable } from 'kysely';
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

export async function updateCustomer(
  db: Executor,
  accountId: number,
  id: number,
  patch: Updateable<CustomersTable>,
): Promise<CustomerRow> {
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
