import type { Executor } from '../../db/database.js';
import type { ApiKeyRow, RefreshTokenRow } from '../../db/schema.js';
import { deleteAllUserDevices } from '../devices/devices.repo.js';
import { revokeAllUserGrants } from '../oauth/oauth.repo.js';

export async function insertRefreshToken(db: Executor, row: Omit<RefreshTokenRow, 'revoked_at'>): Promise<void> {
  await db
    .insertInto('refresh_tokens')
    .values({ ...row, revoked_at: null })
    .execute();
}

export async function findRefreshToken(db: Executor, id: string): Promise<RefreshTokenRow | undefined> {
  return db.selectFrom('refresh_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Marks one token revoked; false when it already was (a concurrent rotation won). */
export async function revokeRefreshToken(db: Executor, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function revokeFamily(db: Executor, familyId: string, now: number): Promise<void> {
  await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: now })
    .where('family_id', '=', familyId)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function revokeUserRefreshTokens(db: Executor, userId: number, now: number): Promise<void> {
  await db.updateTable('refresh_tokens').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
}

/**
 * Ends every token the user holds: its generation moves on (access, plugin and API tokens carry the
 * one they were issued in) and its refresh tokens are revoked. Run in the transaction of the change.
 */
export async function endUserSessions(db: Executor, accountId: number, userId: number, now: number): Promise<void> {
  await db
    .updateTable('users')
    .set((eb) => ({ token_generation: eb('token_generation', '+', 1) }))
    .where('id', '=', userId)
    .where('account_id', '=', accountId)
    .execute();
  await revokeUserRefreshTokens(db, userId, now);
  // Signed out everywhere: the employee's devices stop receiving pushes, and apps it authorized lose their tokens.
  await deleteAllUserDevices(db, userId);
  await revokeAllUserGrants(db, userId, now);
}

/** The current token generation of each of these users that still exists and is confirmed. */
export async function liveTokenGenerations(db: Executor, userIds: number[]): Promise<Map<number, number>> {
  if (!userIds.length) return new Map();
  const rows = await db
    .selectFrom('users')
    .select(['id', 'token_generation'])
    .where('id', 'in', userIds)
    .where('confirmed', '=', 1)
    .execute();
  return new Map(rows.map((r) => [r.id, Number(r.token_generation)]));
}

export async function insertApiKey(
  db: Executor,
  row: { account_id: number; user_id: number; name: string; jti: string; created_at: number },
): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({ ...row, revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findApiKeyByJti(db: Executor, jti: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('jti', '=', jti).executeTakeFirst();
}

export async function listApiKeys(db: Executor, accountId: number): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).where('revoked_at', 'is', null).orderBy('id').execute();
}

export async function revokeApiKey(db: Executor, accountId: number, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
