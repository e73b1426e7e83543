import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { DeviceRow } from '../../db/schema.js';

/** Registers a device, or renames the employee's device with the same push address. */
export async function upsertDevice(db: Executor, row: Omit<DeviceRow, 'id'>): Promise<DeviceRow> {
  return db
    .insertInto('devices')
    .values(row)
    .onConflict((oc) => oc.columns(['user_id', 'address']).doUpdateSet({ name: row.name, keys: row.keys, platform: row.platform }))
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listUserDevices(db: Executor, accountId: number, userId: number): Promise<DeviceRow[]> {
  return db.selectFrom('devices').selectAll().where('account_id', '=', accountId).where('user_id', '=', userId).orderBy('id').execute();
}

export async function deleteUserDevice(db: Executor, accountId: number, userId: number, id: number): Promise<boolean> {
  const result = await db
    .deleteFrom('devices')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}

/** A push service answered that the subscription is gone (404/410). */
export async function deleteDevice(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('devices').where('id', '=', id).execute();
}

/** Signing out everywhere: the employee's devices stop receiving pushes. */
export async function deleteAllUserDevices(db: Executor, userId: number): Promise<void> {
  await db.deleteFrom('devices').where('user_id', '=', userId).execute();
}

export async function pushPreviews(db: Executor, accountId: number): Promise<boolean> {
  const row = await db.selectFrom('accounts').select('push_previews').where('id', '=', accountId).executeTakeFirst();
  return row?.push_previews !== 0;
}

export async function setPushPreviews(db: Executor, accountId: number, on: boolean): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ push_previews: on ? 1 : 0 })
    .where('id', '=', accountId)
    .execute();
}

/**
 * Claims the right to push about a lead to an employee: true for at most one caller per minute,
 * across processes (the row's conditional upsert is the arbiter).
 */
export async function claimPushSlot(db: Executor, userId: number, leadId: number, now: number, intervalMs: number): Promise<boolean> {
  const rows = await db
    .insertInto('push_throttle')
    .values({ user_id: userId, lead_id: leadId, pushed_at: now })
    .onConflict((oc) =>
      oc
        .columns(['user_id', 'lead_id'])
        .doUpdateSet({ pushed_at: now })
        .where(sql.ref('push_throttle.pushed_at'), '<=', now - intervalMs),
    )
    .returning('user_id')
    .execute();
  return rows.length === 1;
}
