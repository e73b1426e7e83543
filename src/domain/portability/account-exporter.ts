import crypto from 'node:crypto';
import { createGzip } from 'node:zlib';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import type { Executor } from '../../db/database.js';
import type { FileStorage } from '../../storage/storage.js';
import { VERSION } from '../../version.js';
import { notFound } from '../errors.js';
import {
  END_ENTRY,
  FORMAT_NAME,
  FORMAT_VERSION,
  PART_BYTES,
  PART_RECORDS,
  SECTIONS,
  partName,
  type ArchiveRecord,
  type Manifest,
} from './archive-format.js';
import * as repo from './portability.repo.js';

/** Progress of a long operation: records (and files) done out of the expected total. */
export type Progress = (done: number, total: number) => void;

export interface ExportSummary {
  exportId: string;
  counts: Record<string, number>;
  files: number;
  missingFiles: number;
}

const PAGE = 1000;

/**
 * Writes an account's archive (docs/export-format.md) to `out`, streamed: one page of rows and one
 * NDJSON part are in memory at a time, and each file's bytes stream from storage into the archive.
 * Rows are read in pages by id up to the highest id each table had when the export started, so
 * rows created meanwhile are left out instead of half in; no long transaction holds the database.
 */
export async function exportAccount(
  db: Executor,
  storage: FileStorage,
  accountId: number,
  out: Writable,
  progress: Progress = () => {},
): Promise<ExportSummary> {
  const account = await repo.findAccount(db, accountId);
  if (!account) throw notFound(`Account ${accountId} does not exist`);
  const bounds = new Map<string, number>();
  const counts: Record<string, number> = {};
  for (const spec of SECTIONS) {
    const bound = await repo.maxId(db, spec, accountId);
    bounds.set(spec.name, bound);
    counts[spec.name] = await repo.countRows(db, spec, accountId, bound);
  }
  // Each file counts twice toward the total: its record and its bytes.
  const total = Object.values(counts).reduce((a, b) => a + b, 0) + counts.files;
  const manifest: Manifest = {
    format: FORMAT_NAME,
    version: FORMAT_VERSION,
    exportId: crypto.randomUUID(),
    createdAt: new Date().toISOString(),
    parleyVersion: VERSION,
    account: {
      id: Number(account.id),
      name: account.name,
      plan: JSON.parse(account.plan) as unknown,
      created_at: Number(account.created_at),
    },
    counts,
  };

  const pack = tar.pack();
  const written = pipeline(pack, createGzip(), out);
  // A failed output stops the pack; the writers below then fail on the destroyed pack.
  written.catch(() => pack.destroy());
  const addEntry = (name: string, body: Buffer) =>
    new Promise<void>((resolve, reject) =>
      pack.entry({ name, size: body.length, mtime: new Date(0) }, body, (err) => (err ? reject(err) : resolve())),
    );

  let done = 0;
  const summary: ExportSummary = { exportId: manifest.exportId, counts: {}, files: 0, missingFiles: 0 };
  try {
    await addEntry('manifest.json', Buffer.from(JSON.stringify(manifest, null, 2)));
    for (const spec of SECTIONS) {
      const bound = bounds.get(spec.name);
      if (bound === undefined) throw new Error(`no id bound for section ${spec.name}`);
      let part = 0;
      let lines: string[] = [];
      let bytes = 0;
      let exported = 0;
      const flush = async () => {
        if (!lines.length) return;
        await addEntry(partName(spec.name, ++part), Buffer.from(lines.join('')));
        lines = [];
        bytes = 0;
      };
      const fileRows: ArchiveRecord[] = [];
      let after: repo.PageKey;
      for (;;) {
        const rows = await repo.readPage(db, spec, accountId, after, bound, PAGE);
        for (const row of rows) {
          const line = `${JSON.stringify(normalize(row))}\n`;
          lines.push(line);
          bytes += line.length;
          if (lines.length >= PART_RECORDS || bytes >= PART_BYTES) await flush();
        }
        exported += rows.length;
        done += rows.length;
        progress(done, total);
        if (spec.name === 'files') fileRows.push(...rows);
        if (rows.length < PAGE) break;
        const last = rows[rows.length - 1];
        after = spec.hasId ? { id: last.id as number | string } : { lead_id: Number(last.lead_id), tag_id: Number(last.tag_id) };
        // Files' bytes follow their records part by part, so the file list never grows unbounded.
        if (spec.name === 'files' && fileRows.length >= PART_RECORDS) {
          await flush();
          done = await addFiles(fileRows.splice(0), storage, db, accountId, pack, summary, done, total, progress);
        }
      }
      await flush();
      if (spec.name === 'files') done = await addFiles(fileRows, storage, db, accountId, pack, summary, done, total, progress);
      summary.counts[spec.name] = exported;
    }
    // The last entry: an archive without it was cut short (docs/export-format.md).
    await addEntry(END_ENTRY, Buffer.from(JSON.stringify({ counts: summary.counts, files: summary.files })));
    pack.finalize();
  } catch (err) {
    pack.destroy(err as Error);
    await written.catch(() => {});
    throw err;
  }
  await written;
  return summary;
}

/** Numbers as numbers (PostgreSQL's bigint may come as text from some drivers). */
function normalize(row: ArchiveRecord): ArchiveRecord {
  for (const key of Object.keys(row)) {
    const v = row[key];
    if (typeof v === 'bigint') row[key] = Number(v);
  }
  return row;
}

async function addFiles(
  rows: ArchiveRecord[],
  storage: FileStorage,
  db: Executor,
  accountId: number,
  pack: tar.Pack,
  summary: ExportSummary,
  done: number,
  total: number,
  progress: Progress,
): Promise<number> {
  for (const row of rows) {
    const key = await repo.fileStorageKey(db, accountId, String(row.id));
    const stream = key ? await storage.open(key) : undefined;
    if (!stream) {
      // A record whose bytes are gone (removed from disk by hand): the importer keeps the record.
      summary.missingFiles++;
    } else {
      await new Promise<void>((resolve, reject) => {
        const sink = pack.entry({ name: `files/${String(row.id)}`, size: Number(row.size), mtime: new Date(0) }, (err) =>
          err ? reject(err) : resolve(),
        );
        stream.on('error', (err) => sink.destroy(err));
        stream.pipe(sink);
      });
      summary.files++;
    }
    progress(++done, total);
  }
  return done;
}
