import { sql, type Updateable } from 'kysely';
import { schemaLockKey, type Executor } from '../../db/database.js';
import type { AccountRow, AccountsTable } from '../../db/schema.js';
import type { Plan } from './plan.js';

export async function insertAccount(db: Executor, name: string, plan: Plan, now: number): Promise<AccountRow> {
  return db
    .insertInto('accounts')
    .values({ name, plan: JSON.stringify(plan), created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findAccount(db: Executor, id: number): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countAccounts(db: Executor): Promise<number> {
  const row = await db.selectFrom('accounts').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function listAccounts(db: Executor): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('id').execute();
}

/** Writes settings columns (account-settings.ts). */
export async function updateAccountSettings(db: Executor, id: number, values: Updateable<AccountsTable>): Promise<void> {
  await db.updateTable('accounts').set(values).where('id', '=', id).execute();
}

export async function updatePlan(db: Executor, id: number, plan: Plan): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ plan: JSON.stringify(plan) })
    .where('id', '=', id)
    .execute();
}

/**
 * PostgreSQL: account creations one at a time (the first-account check, unique logins), until
 * commit; in this installation's schema (db/database.ts `schemaLockKey`).
 */
export async function lockAccountCreation(trx: Executor): Promise<void> {
  await sql`select pg_advisory_xact_lock(${sql.raw(schemaLockKey(ACCOUNT_CREATION_LOCK))}, 0)`.execute(trx);
}

const ACCOUNT_CREATION_LOCK = 7311001;
