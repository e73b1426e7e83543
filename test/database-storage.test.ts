import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_BYTES, DatabaseStorage } from '../src/storage/database-storage.js';
import { FileTooLargeError } from '../src/storage/storage.js';
import { createHarness, type Harness } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import { postForm } from './helpers/multipart.js';

let h: Harness;
beforeAll(async () => {
  // Files in the database, as PARLEY_FILE_STORAGE=auto chooses on PostgreSQL.
  h = await createHarness({ env: { PARLEY_FILE_STORAGE: 'database' } });
});
afterAll(() => h.close());

async function read(stream: Readable | undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream!) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

const chunkCount = async () =>
  Number(
    (
      await h.database.db.kysely
        .selectFrom('file_chunks')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('files in the database', () => {
  it('streams whole files in chunks, reads ranges across chunk borders, keeps nothing of failed puts', async () => {
    const storage = new DatabaseStorage(h.database.db.kysely);
    const data = crypto.randomBytes(CHUNK_BYTES * 2 + 1234);
    // Pieces of uneven sizes, as a network stream delivers them.
    const pieces = [data.subarray(0, 1000), data.subarray(1000, CHUNK_BYTES + 17), data.subarray(CHUNK_BYTES + 17)];
    const put = await storage.put(Readable.from(pieces), { name: 'x.bin', mime: 'application/octet-stream' });
    expect(put).toMatchObject({ size: data.length, md5: crypto.createHash('md5').update(data).digest('hex') });
    expect(Buffer.compare(await read(await storage.open(put.key)), data)).toBe(0);
    for (const [start, end] of [
      [0, 0],
      [CHUNK_BYTES - 2, CHUNK_BYTES + 2],
      [5, CHUNK_BYTES * 2 + 100],
      [data.length - 3, data.length - 1],
    ] as const) {
      expect(Buffer.compare(await read(await storage.open(put.key, { start, end })), data.subarray(start, end + 1))).toBe(0);
    }
    const empty = await storage.put(Readable.from([]), { name: 'e', mime: 'text/plain' });
    expect(empty.size).toBe(0);
    expect((await read(await storage.open(empty.key))).length).toBe(0);

    const before = await chunkCount();
    const big = Buffer.alloc(CHUNK_BYTES * 2);
    await expect(storage.put(Readable.from([big]), { name: 'x', mime: 'text/plain', maxBytes: CHUNK_BYTES + 1 })).rejects.toBeInstanceOf(
      FileTooLargeError,
    );
    const failing = (async function* () {
      yield Buffer.alloc(CHUNK_BYTES + 5);
      throw new Error('client went away');
    })();
    await expect(storage.put(failing, { name: 'x', mime: 'text/plain' })).rejects.toThrow('client went away');
    expect(await chunkCount()).toBe(before);

    await storage.delete(put.key);
    expect(await storage.open(put.key)).toBeUndefined();
    expect(await storage.open('../../etc/passwd')).toBeUndefined();
  });

  it('an upload through the API is served from the database (any process on it serves it)', async () => {
    const owner = await h.signUp();
    const widget = await createIntegration(h, owner.accountId, 'widget');
    const data = crypto.randomBytes(3000);
    const res = await postForm(h, '/v1.3/messaging/upload', owner.access, [
      ['said', String(widget)],
      ['media', { data, type: 'application/octet-stream', filename: 'a.bin' }],
    ]);
    expect(res.statusCode, res.body).toBe(200);
    const got = await h.request({ method: 'GET', url: res.json().media.path });
    expect(got.statusCode).toBe(200);
    expect(Buffer.compare(got.rawPayload, data)).toBe(0);
    const [row] = await h.database.db.kysely.selectFrom('files').select('storage_key').where('account_id', '=', owner.accountId).execute();
    const chunks = await h.database.db.kysely.selectFrom('file_chunks').select('seq').where('storage_key', '=', row!.storage_key).execute();
    expect(chunks).toHaveLength(1);
  });
});
