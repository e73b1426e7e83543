import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { BridgeRequestRow, BridgeRow, IntegrationRow } from '../../db/schema.js';

/** SQL of the account bridge: bridges (token, prompt, holder) and bridge_requests. */

export async function saveToken(
  db: Executor,
  row: { integrationId: number; accountId: number; tokenHash: string; now: number },
): Promise<void> {
  await db
    .insertInto('bridges')
    .values({ integration_id: row.integrationId, account_id: row.accountId, token_hash: row.tokenHash, updated_at: row.now })
    .onConflict((oc) => oc.column('integration_id').doUpdateSet({ token_hash: row.tokenHash, updated_at: row.now }))
    .execute();
}

/** The bridge of a live integration, with the integration. */
export async function findBridge(
  db: Executor,
  integrationId: number,
): Promise<{ bridge: BridgeRow; integration: IntegrationRow } | undefined> {
  const integration = await db
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', integrationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!integration) return undefined;
  const bridge = await db.selectFrom('bridges').selectAll().where('integration_id', '=', integrationId).executeTakeFirst();
  return bridge ? { bridge, integration } : undefined;
}

export async function findBridgeRow(db: Executor, integrationId: number): Promise<BridgeRow | undefined> {
  return db.selectFrom('bridges').selectAll().where('integration_id', '=', integrationId).executeTakeFirst();
}

export async function setPrompt(db: Executor, integrationId: number, prompt: string | null, now: number): Promise<void> {
  await db.updateTable('bridges').set({ prompt, updated_at: now }).where('integration_id', '=', integrationId).execute();
}

export async function holdBridge(db: Executor, integrationId: number, connId: string, now: number): Promise<void> {
  await db
    .updateTable('bridges')
    .set({ conn_id: connId, connected_at: now, updated_at: now })
    .where('integration_id', '=', integrationId)
    .execute();
}

/** Clears the holder when it is still this connection (a newer one may have taken over). */
export async function releaseBridge(db: Executor, integrationId: number, connId: string, now: number): Promise<boolean> {
  const res = await db
    .updateTable('bridges')
    .set({ conn_id: null, updated_at: now })
    .where('integration_id', '=', integrationId)
    .where('conn_id', '=', connId)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function setIntegrationStatus(
  db: Executor,
  integrationId: number,
  patch: Partial<Pick<IntegrationRow, 'status' | 'login' | 'external_id' | 'identifier' | 'avatar'>>,
): Promise<void> {
  await db.updateTable('integrations').set(patch).where('id', '=', integrationId).execute();
}

export async function insertRequest(
  db: Executor,
  row: { integrationId: number; kind: string; payload: string; now: number; deadline: number },
): Promise<number> {
  const inserted = await db
    .insertInto('bridge_requests')
    .values({
      integration_id: row.integrationId,
      kind: row.kind,
      payload: row.payload,
      state: 'pending',
      created_at: row.now,
      deadline: row.deadline,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return inserted.id;
}

/** Takes the pending requests of these integrations for a connection; those past their deadline stay. */
export async function claimPending(db: Executor, integrationId: number, connId: string, now: number): Promise<BridgeRequestRow[]> {
  return db
    .updateTable('bridge_requests')
    .set({ state: 'taken', conn_id: connId })
    .where('integration_id', '=', integrationId)
    .where('state', '=', 'pending')
    .where('deadline', '>', now)
    .returningAll()
    .execute();
}

/** Records a bridge's answer; false when the request is not this integration's or no longer waited for. */
export async function finishRequest(db: Executor, id: number, integrationId: number, result: string): Promise<boolean> {
  const res = await db
    .updateTable('bridge_requests')
    .set({ state: 'done', result })
    .where('id', '=', id)
    .where('integration_id', '=', integrationId)
    .where('state', 'in', ['pending', 'taken'])
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** The caller gives up: true when the request had no answer yet (it will never be forwarded now). */
export async function expireRequest(db: Executor, id: number): Promise<boolean> {
  const res = await db
    .updateTable('bridge_requests')
    .set({ state: 'expired', payload: '{}' })
    .where('id', '=', id)
    .where('state', 'in', ['pending', 'taken'])
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function requestsByIds(db: Executor, ids: number[]): Promise<BridgeRequestRow[]> {
  if (!ids.length) return [];
  return db.selectFrom('bridge_requests').selectAll().where('id', 'in', ids).execute();
}

export async function findRequest(db: Executor, id: number): Promise<BridgeRequestRow | undefined> {
  return db.selectFrom('bridge_requests').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteRequest(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('bridge_requests').where('id', '=', id).execute();
}

/** A connection ended: what it took and did not answer goes back to pending, for the next bridge. */
export async function returnTaken(db: Executor, connId: string): Promise<number> {
  const res = await db
    .updateTable('bridge_requests')
    .set({ state: 'pending', conn_id: null })
    .where('conn_id', '=', connId)
    .where('state', '=', 'taken')
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Requests nobody waits for any more (their caller crashed): removed an hour after their deadline. */
export async function purgeStale(db: Executor, now: number): Promise<void> {
  await db
    .deleteFrom('bridge_requests')
    .where('deadline', '<', now - 3_600_000)
    .execute();
}

export const notifyChannel = 'parley_bridge';

/**
 * On PostgreSQL, wakes every process LISTENing (delivered on commit; the payload is a hint only).
 * The channel is the database's: the payload is preceded by Parley's schema and a space, and the
 * listeners of another installation in the same database ignore it (domain/bridge/bridge-hub.ts).
 */
export async function notify(db: Executor, payload: string): Promise<void> {
  await sql`select pg_notify(${notifyChannel}, current_schema() || ' ' || ${payload})`.execute(db);
}

/** An active bridged integration back to `connecting` (its bridge went away). */
/** An active bridge integration goes back to `connecting`; true when it was active. */
export async function markOffline(db: Executor, integrationId: number): Promise<boolean> {
  const done = await db
    .updateTable('integrations')
    .set({ status: 'connecting' })
    .where('id', '=', integrationId)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return Number(done.numUpdatedRows) > 0;
}
