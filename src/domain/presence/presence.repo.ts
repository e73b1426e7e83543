import type { Executor } from '../../db/database.js';

export async function setPresence(db: Executor, processId: string, userId: number, connections: number, now: number): Promise<void> {
  if (connections <= 0) {
    await db.deleteFrom('realtime_presence').where('process_id', '=', processId).where('user_id', '=', userId).execute();
    return;
  }
  await db
    .insertInto('realtime_presence')
    .values({ process_id: processId, user_id: userId, connections, seen_at: now })
    .onConflict((oc) => oc.columns(['process_id', 'user_id']).doUpdateSet({ connections, seen_at: now }))
    .execute();
}

export async function touchProcess(db: Executor, processId: string, now: number): Promise<void> {
  await db.updateTable('realtime_presence').set({ seen_at: now }).where('process_id', '=', processId).execute();
}

export async function forgetProcess(db: Executor, processId: string): Promise<void> {
  await db.deleteFrom('realtime_presence').where('process_id', '=', processId).execute();
}

/** Of these employees, those with a realtime connection in a process that was alive since `freshAfter`. */
export async function connectedUsers(db: Executor, userIds: number[], freshAfter: number): Promise<Set<number>> {
  if (!userIds.length) return new Set();
  const rows = await db
    .selectFrom('realtime_presence')
    .select('user_id')
    .where('user_id', 'in', userIds)
    .where('seen_at', '>', freshAfter)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}
