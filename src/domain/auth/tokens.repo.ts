import type { Executor } from '../../db/database.js';
import type { ApiKeyRow, RefreshTokenRow } from '../../db/schema.js';

export async function insertRefreshToken(
  db: Executor,
  row: Omit<RefreshTokenRow, 'revoked_at'>,
): Promise<void> {
  await db.insertInto('refresh_tokens').values({ ...row, revoked_at: null }).execute();
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
  await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: now })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
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
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('id')
    .execute();
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
