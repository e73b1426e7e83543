import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { dialectOf, type Executor } from '../../db/database.js';
import type { FileStorage } from '../../storage/storage.js';
import type { Clock } from '../clock.js';
import { AppError } from '../errors.js';
import { ImportError } from './import-error.js';
import { FORMAT_NAME, FORMAT_VERSION, SECTIONS, entryKind, type EndRecord, type Manifest } from './archive-format.js';
import { RecordWriter, type ImportCounters } from './record-writer.js';
import type { Progress } from './account-exporter.js';
import * as repo from './portability.repo.js';

/** What an import did (printed by `parley import`, stored with the import). */
export interface ImportReport {
  exportId: string;
  /** The account created here. */
  accountId: number;
  /** The account's id in the installation the archive came from. */
  sourceAccountId: number;
  /** True when this installation had imported the archive before: nothing was changed now. */
  alreadyImported: boolean;
  counts: Record<string, number>;
  files: number;
  /** File records whose bytes the archive did not hold (imported; their downloads answer 404). */
  filesWithoutBytes: number;
  /** References to employees, statuses, payment types or profiles the archive did not hold, set to null. */
  referencesCleared: number;
}

const MAX_MANIFEST = 1024 * 1024;
const MAX_PART = 64 * 1024 * 1024;

/**
 * Imports an account archive (docs/export-format.md) into a new account of this installation, all
 * or nothing: one transaction holds every row, and files stored before a failure are removed, so a
 * refused or broken archive leaves nothing behind. An archive imported before (same export id) is
 * not imported again. Streamed: one NDJSON part and one batch of rows are in memory at a time.
 */
export async function importAccount(
  kysely: Executor,
  storage: FileStorage,
  source: Readable,
  clock: Clock,
  progress: Progress = () => {},
): Promise<ImportReport> {
  const extract = tar.extract();
  // Listening before any byte flows: tar-stream drops entries emitted while nobody iterates.
  const entries = extract[Symbol.asyncIterator]();
  const gunzip = createGunzip();
  // Set the moment the archive's bytes fail to decompress or unpack, before the entry being read
  // (or the file being stored) fails with them: such a failure is the archive's, whichever step met it.
  let brokenArchive: Error | undefined;
  for (const stream of [gunzip, extract]) stream.once('error', (err: Error) => (brokenArchive ??= err));
  // Never rejects: a broken stream surfaces as the failure of the entry being read.
  let readError: Error | undefined;
  const reading = pipeline(source, gunzip, extract).catch((err: Error) => {
    readError = err;
  });
  const stored: string[] = [];
  let report: ImportReport;
  try {
    report = await kysely.transaction().execute(async (trx) => {
      const nextEntry = async () => {
        try {
          return await entries.next();
        } catch (err) {
          if (err instanceof AppError) throw err;
          throw new ImportError(`The archive is corrupt or truncated (${(err as Error).message})`);
        }
      };
      const first = await nextEntry();
      if (first.done || entryKind(first.value.header.name).kind !== 'manifest') {
        throw new ImportError('Not a Parley account archive: manifest.json is not its first entry');
      }
      const manifest = checkManifest(await readEntry(first.value, MAX_MANIFEST));
      const previous = await repo.findImport(trx, manifest.exportId);
      if (previous) return { ...(JSON.parse(previous.report) as ImportReport), alreadyImported: true };

      const accountId = await repo.insertAccount(trx, {
        name: manifest.account.name,
        plan: JSON.stringify(manifest.account.plan),
        created_at: manifest.account.created_at,
      });
      const total = Object.values(manifest.counts).reduce((a, b) => a + (Number(b) || 0), 0);
      const counters: ImportCounters = { done: 0, total, files: 0, filesWithoutBytes: 0, referencesCleared: 0 };
      const writer = new RecordWriter(trx, dialectOf(trx), storage, accountId, counters, stored, progress);
      let end: EndRecord | undefined;
      for (let next = await nextEntry(); !next.done; next = await nextEntry()) {
        const entry = next.value;
        const name = entry.header.name;
        if (end) throw new ImportError(`The archive has entries after ${name}: it is not one export`);
        const kind = entryKind(name);
        if (kind.kind === 'part') await writer.part(kind.section, name, await readEntry(entry, MAX_PART));
        else if (kind.kind === 'file') await writer.file(kind.id, entry, entry.header.size ?? 0);
        else if (kind.kind === 'end') end = parseJson<EndRecord>(await readEntry(entry, MAX_MANIFEST), name);
        else throw new ImportError(`Unexpected entry ${name} in the archive`);
      }
      // The whole stream read well (gzip's own checksum included) before anything commits.
      await reading;
      if (readError) throw new ImportError(`The archive is corrupt or truncated (${(readError as Error).message})`);
      if (!end) throw new ImportError('The archive is truncated: its end entry is missing');
      await writer.finish();
      for (const spec of SECTIONS) {
        const expected = Number(end.counts?.[spec.name] ?? 0);
        if ((writer.counts[spec.name] ?? 0) !== expected) {
          throw new ImportError(
            `The archive is truncated or altered: ${spec.name} holds ${writer.counts[spec.name] ?? 0} records, its end entry says ${expected}`,
          );
        }
      }
      const result: ImportReport = {
        exportId: manifest.exportId,
        accountId,
        sourceAccountId: manifest.account.id,
        alreadyImported: false,
        counts: writer.counts,
        files: counters.files,
        filesWithoutBytes: counters.filesWithoutBytes,
        referencesCleared: counters.referencesCleared,
      };
      await repo.insertImport(trx, {
        export_id: manifest.exportId,
        account_id: accountId,
        report: JSON.stringify(result),
        created_at: clock.now(),
      });
      return result;
    });
  } catch (err) {
    const broken = brokenArchive;
    source.destroy();
    extract.destroy();
    // The transaction rolled back; the bytes stored for it go too.
    await Promise.all(stored.map((key) => storage.delete(key).catch(() => {})));
    if (broken && !(err instanceof AppError)) throw new ImportError(`The archive is corrupt or truncated (${broken.message})`);
    throw err;
  }
  if (report.alreadyImported) {
    source.destroy();
    extract.destroy();
  }
  return report;
}

function checkManifest(body: Buffer): Manifest {
  const m = parseJson<Partial<Manifest>>(body, 'manifest.json');
  if (m.format !== FORMAT_NAME) throw new ImportError('Not a Parley account archive (manifest format)');
  if (typeof m.version !== 'number' || !Number.isInteger(m.version) || m.version < 1)
    throw new ImportError('The archive has no valid format version');
  if (m.version > FORMAT_VERSION) {
    throw new ImportError(
      `The archive has format version ${m.version}; this Parley reads up to version ${FORMAT_VERSION}: upgrade Parley to import it`,
    );
  }
  const a = m.account;
  if (
    typeof m.exportId !== 'string' ||
    !/^[0-9a-f-]{36}$/.test(m.exportId) ||
    !a ||
    typeof a.name !== 'string' ||
    !Number.isSafeInteger(a.id) ||
    !Number.isSafeInteger(a.created_at)
  ) {
    throw new ImportError('The archive manifest is incomplete');
  }
  return { ...m, counts: typeof m.counts === 'object' && m.counts ? m.counts : {} } as Manifest;
}

function parseJson<T>(body: Buffer, name: string): T {
  try {
    const v = JSON.parse(body.toString('utf8')) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not an object');
    return v as T;
  } catch {
    throw new ImportError(`The archive is corrupt: ${name} is not a JSON object`);
  }
}

async function readEntry(entry: AsyncIterable<Buffer> & { header: { name: string; size?: number } }, max: number): Promise<Buffer> {
  if ((entry.header.size ?? 0) > max) throw new ImportError(`The archive entry ${entry.header.name} is larger than ${max} bytes`);
  const chunks: Buffer[] = [];
  for await (const chunk of entry) chunks.push(chunk);
  return Buffer.concat(chunks);
}
