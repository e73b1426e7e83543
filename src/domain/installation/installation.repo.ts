import type { Executor } from '../../db/database.js';

/** This installation's id (migration 0120); undefined before that migration ran. */
export async function installationId(db: Executor): Promise<string | undefined> {
  const row = await db.selectFrom('installation').select('id').executeTakeFirst();
  return row?.id;
}
