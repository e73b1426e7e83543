import type { Executor } from '../db/database.js';

export async function insertChunk(db: Executor, key: string, seq: number, data: Buffer): Promise<void> {
  await db.insertInto('file_chunks').values({ storage_key: key, seq, data }).execute();
}

/** The chunks `from`..`to` (inclusive) of a key, in order. */
export async function readChunks(db: Executor, key: string, from: number, to: number): Promise<Buffer[]> {
  const rows = await db
    .selectFrom('file_chunks')
    .select('data')
    .where('storage_key', '=', key)
    .where('seq', '>=', from)
    .where('seq', '<=', to)
    .orderBy('seq')
    .execute();
  return rows.map((r) => Buffer.from(r.data));
}

export async function hasChunks(db: Executor, key: string): Promise<boolean> {
  return (
    (await db.selectFrom('file_chunks').select('seq').where('storage_key', '=', key).where('seq', '=', 0).executeTakeFirst()) !== undefined
  );
}

export async function deleteChunks(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('file_chunks').where('storage_key', '=', key).execute();
}
