import type { Executor } from '../../db/database.js';
import type { OAuthAppRow, OAuthCodeRow, OAuthGrantRow, OAuthRefreshTokenRow } from '../../db/schema.js';

export async function insertApp(db: Executor, row: Omit<OAuthAppRow, 'id'>): Promise<OAuthAppRow> {
  return db.insertInto('oauth_apps').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listApps(db: Executor, accountId: number): Promise<OAuthAppRow[]> {
  return db.selectFrom('oauth_apps').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

export async function findAppByClientId(db: Executor, clientId: string): Promise<OAuthAppRow | undefined> {
  return db.selectFrom('oauth_apps').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

export async function findApp(db: Executor, id: number): Promise<OAuthAppRow | undefined> {
  return db.selectFrom('oauth_apps').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Deleting the row deletes its grants, codes and refresh tokens (cascades). */
export async function deleteApp(db: Executor, accountId: number, id: number): Promise<boolean> {
  const result = await db.deleteFrom('oauth_apps').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

export async function insertGrant(db: Executor, row: Omit<OAuthGrantRow, 'id' | 'revoked_at'>): Promise<OAuthGrantRow> {
  return db
    .insertInto('oauth_grants')
    .values({ ...row, revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findGrant(db: Executor, id: number): Promise<OAuthGrantRow | undefined> {
  return db.selectFrom('oauth_grants').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Whether access tokens naming this grant still work: the grant is not revoked (its app and employee exist). */
export async function isGrantActive(db: Executor, id: number, accountId: number, userId: number): Promise<boolean> {
  const row = await db
    .selectFrom('oauth_grants')
    .select('id')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

export async function revokeGrant(db: Executor, id: number, now: number): Promise<void> {
  await db.updateTable('oauth_grants').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('grant_id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Signing out everywhere: every app the employee authorized loses its tokens. */
export async function revokeAllUserGrants(db: Executor, userId: number, now: number): Promise<void> {
  await db.updateTable('oauth_grants').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('revoked_at', 'is', null)
    .where('grant_id', 'in', (eb) => eb.selectFrom('oauth_grants').select('id').where('user_id', '=', userId))
    .execute();
}

/** An employee's revocation of an app: every grant it gave that app. */
export async function revokeUserAppGrants(db: Executor, userId: number, appId: number, now: number): Promise<number> {
  const grants = await db
    .selectFrom('oauth_grants')
    .select('id')
    .where('user_id', '=', userId)
    .where('app_id', '=', appId)
    .where('revoked_at', 'is', null)
    .execute();
  for (const g of grants) await revokeGrant(db, g.id, now);
  return grants.length;
}

export interface ConnectedAppRow {
  app_id: number;
  name: string;
  scope: string;
  created_at: number;
}

/** The apps an employee has active grants for, each with its grants' scopes (one row per grant). */
export async function listUserGrants(db: Executor, accountId: number, userId: number): Promise<ConnectedAppRow[]> {
  return db
    .selectFrom('oauth_grants')
    .innerJoin('oauth_apps', 'oauth_apps.id', 'oauth_grants.app_id')
    .select(['oauth_apps.id as app_id', 'oauth_apps.name', 'oauth_grants.scope', 'oauth_grants.created_at'])
    .where('oauth_grants.account_id', '=', accountId)
    .where('oauth_grants.user_id', '=', userId)
    .where('oauth_grants.revoked_at', 'is', null)
    .orderBy('oauth_grants.id')
    .execute();
}

export async function insertCode(db: Executor, row: Omit<OAuthCodeRow, 'id' | 'used_at'>): Promise<void> {
  await db
    .insertInto('oauth_codes')
    .values({ ...row, used_at: null })
    .execute();
}

export async function findCodeByHash(db: Executor, hash: string): Promise<OAuthCodeRow | undefined> {
  return db.selectFrom('oauth_codes').selectAll().where('code_hash', '=', hash).executeTakeFirst();
}

/** Marks a code used; false when it already was (a concurrent exchange won). */
export async function useCode(db: Executor, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('oauth_codes')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function insertRefreshToken(db: Executor, row: Omit<OAuthRefreshTokenRow, 'id' | 'revoked_at'>): Promise<void> {
  await db
    .insertInto('oauth_refresh_tokens')
    .values({ ...row, revoked_at: null })
    .execute();
}

export async function findRefreshTokenByHash(db: Executor, hash: string): Promise<OAuthRefreshTokenRow | undefined> {
  return db.selectFrom('oauth_refresh_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/** Marks one refresh token rotated; false when it already was. */
export async function revokeRefreshToken(db: Executor, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('oauth_refresh_tokens')
    .set({ revoked_at: now })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
