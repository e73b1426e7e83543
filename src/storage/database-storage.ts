import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { Executor } from '../db/database.js';
import { deleteChunks, hasChunks, insertChunk, readChunks } from './file-chunks.repo.js';
import { FileTooLargeError, type ByteRange, type FileStorage, type PutOptions, type PutResult } from './storage.js';

const KEY = /^[0-9a-f]{32}$/;
/** Bytes per stored chunk: every chunk but a file's last is exactly this long. */
export const CHUNK_BYTES = 256 * 1024;
/** Chunks read per query while streaming a file out. */
const CHUNKS_PER_READ = 4;

/**
 * Files in the database (table file_chunks), for several processes on one PostgreSQL database:
 * every process reads what any process stored, and backups of the database hold the files too.
 * A put streams the source into fixed-size chunks while counting and hashing; the domain learns
 * the key only when the put is complete (and a failed put deletes its chunks), so nobody reads half
 * a file. A read streams a few chunks per query; a range reads only the chunks it covers.
 */
export class DatabaseStorage implements FileStorage {
  constructor(private readonly db: Executor) {}

  async put(source: Readable | AsyncIterable<Uint8Array>, options: PutOptions): Promise<PutResult> {
    const key = crypto.randomBytes(16).toString('hex');
    const hash = crypto.createHash('md5');
    const max = options.maxBytes ?? Infinity;
    let size = 0;
    let seq = 0;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    try {
      for await (const piece of source) {
        const chunk = Buffer.from(piece);
        size += chunk.length;
        if (size > max) throw new FileTooLargeError(max);
        hash.update(chunk);
        pending.push(chunk);
        pendingBytes += chunk.length;
        while (pendingBytes >= CHUNK_BYTES) {
          const all = Buffer.concat(pending);
          await insertChunk(this.db, key, seq++, all.subarray(0, CHUNK_BYTES));
          const rest = all.subarray(CHUNK_BYTES);
          pending = rest.length ? [rest] : [];
          pendingBytes = rest.length;
        }
      }
      // The last (possibly empty) chunk: chunk 0 always exists, which is how open() knows the key.
      if (pendingBytes || seq === 0) await insertChunk(this.db, key, seq++, Buffer.concat(pending));
    } catch (err) {
      await deleteChunks(this.db, key).catch(() => {});
      throw err;
    }
    return { key, size, md5: hash.digest('hex') };
  }

  async open(key: string, range?: ByteRange): Promise<Readable | undefined> {
    if (!KEY.test(key) || !(await hasChunks(this.db, key))) return undefined;
    const first = range ? Math.floor(range.start / CHUNK_BYTES) : 0;
    const last = range ? Math.floor(range.end / CHUNK_BYTES) : Number.MAX_SAFE_INTEGER;
    const db = this.db;
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let seq = first; seq <= last; seq += CHUNKS_PER_READ) {
        const batch = await readChunks(db, key, seq, Math.min(last, seq + CHUNKS_PER_READ - 1));
        for (let i = 0; i < batch.length; i++) {
          let data = batch[i];
          const at = (seq + i) * CHUNK_BYTES;
          if (range) data = data.subarray(Math.max(0, range.start - at), Math.max(0, range.end + 1 - at));
          if (data.length) yield data;
        }
        if (batch.length < CHUNKS_PER_READ) return;
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  async delete(key: string): Promise<void> {
    if (!KEY.test(key)) return;
    await deleteChunks(this.db, key);
  }
}
