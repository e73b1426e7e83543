import type { Executor } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { NewUser, UserRow, UserUpdate } from '../../db/schema.js';

export async function insertUser(db: Executor, user: NewUser): Promise<UserRow> {
  return db.insertInto('users').values(user).returningAll().executeTakeFirstOrThrow();
}

export async function findUserByLogin(db: Executor, login: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('login', '=', login).executeTakeFirst();
}

const userById = prepared((db, p: { accountId: number; userId: number }) =>
  db.selectFrom('users').selectAll().where('id', '=', p.userId).where('account_id', '=', p.accountId),
);

/** Scoped by account: an id of another account finds nothing. Every authenticated request runs it. */
export async function findUser(db: Executor, accountId: number, id: number): Promise<UserRow | undefined> {
  return (await userById(db, { accountId, userId: id }))[0];
}

export async function findOwner(db: Executor, accountId: number): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('role', '=', 'owner')
    .orderBy('id')
    .executeTakeFirst();
}

export async function updateUser(db: Executor, accountId: number, id: number, patch: UserUpdate): Promise<void> {
  await db.updateTable('users').set(patch).where('id', '=', id).where('account_id', '=', accountId).execute();
}

/** The ids among `ids` that are employees of the account. */
export async function existingUserIds(db: Executor, accountId: number, ids: number[]): Promise<Set<number>> {
  if (!ids.length) return new Set();
  const rows = await db.selectFrom('users').select('id').where('account_id', '=', accountId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}
