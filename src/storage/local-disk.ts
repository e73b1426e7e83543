import crypto from 'node:crypto';
import { once } from 'node:events';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FileTooLargeError, type ByteRange, type FileStorage, type PutOptions, type PutResult } from './storage.js';

const KEY = /^[0-9a-f]{32}$/;

/**
 * Files on the local disk under `<root>/<first two hex digits of the key>/<key>`. A put streams into
 * `<root>/.tmp/` (same file system) while counting and hashing, is flushed to disk, and is renamed
 * into place only when complete: readers never see half a file. Keys are random, so concurrent
 * writers (several processes sharing the data folder) never collide.
 */
export class LocalDiskStorage implements FileStorage {
  constructor(readonly root: string) {}

  private pathOf(key: string): string {
    return path.join(this.root, key.slice(0, 2), key);
  }

  async put(source: Readable | AsyncIterable<Uint8Array>, options: PutOptions): Promise<PutResult> {
    const key = crypto.randomBytes(16).toString('hex');
    const tmpDir = path.join(this.root, '.tmp');
    await fsp.mkdir(tmpDir, { recursive: true });
    const tmp = path.join(tmpDir, `${key}.part`);
    const hash = crypto.createHash('md5');
    const max = options.maxBytes ?? Infinity;
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        if (size > max) return callback(new FileTooLargeError(max));
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    // Opened before streaming: a stream that opens lazily could create the file after a failed
    // put has already removed it.
    const handle = await fsp.open(tmp, 'wx', 0o600);
    const out = handle.createWriteStream({ flush: true });
    try {
      await pipeline(source, meter, out);
      if (!out.closed) await once(out, 'close');
      const target = this.pathOf(key);
      await fsp.mkdir(path.dirname(target), { recursive: true });
      await fsp.rename(tmp, target);
    } catch (err) {
      out.destroy();
      await handle.close().catch(() => {});
      await fsp.rm(tmp, { force: true });
      throw err;
    }
    return { key, size, md5: hash.digest('hex') };
  }

  async open(key: string, range?: ByteRange): Promise<Readable | undefined> {
    if (!KEY.test(key)) return undefined;
    let handle: fsp.FileHandle;
    try {
      handle = await fsp.open(this.pathOf(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  async delete(key: string): Promise<void> {
    if (!KEY.test(key)) return;
    await fsp.rm(this.pathOf(key), { force: true });
  }
}
