import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { sql } from 'kysely';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { AppError } from '../errors.js';
import { VERSION } from '../../version.js';
import type { Progress } from './account-exporter.js';

/** The secrets of the data folder: a restore needs them (stored credentials are sealed with one). */
const SECRETS = ['jwt-secret', 'encryption-key'];

/**
 * `parley backup`: a gzip-compressed tar laid out like the data folder, so restoring is extracting
 * it into an empty one (docs/operations.md). On SQLite it holds `parley.db`, a consistent copy made
 * with SQLite's online backup from a connection of its own while the server keeps serving (WAL:
 * readers and the writer go on). On PostgreSQL it holds `parley.dump`, pg_dump's consistent
 * snapshot of Parley's schema (custom format, for pg_restore). Then the files and the two secrets.
 * Files are immutable once stored, so a file copied after the database snapshot is either the one
 * it names or one it does not know yet.
 */
export async function runBackup(config: Config, db: Db, outFile: string, progress: Progress = () => {}): Promise<{ files: number }> {
  const { dialect } = db;
  const files = await listFiles(path.join(config.dataDir, 'files'));
  const pack = tar.pack();
  const out = fs.createWriteStream(outFile, { mode: 0o600 });
  const written = pipeline(pack, createGzip(), out);
  written.catch(() => pack.destroy());
  const tmpDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'parley-backup-'));
  const total = files.length + 1;
  let done = 0;
  try {
    const manifest = { format: 'parley-backup', version: 1, parleyVersion: VERSION, dialect, createdAt: new Date().toISOString() };
    await addBuffer(pack, 'backup.json', Buffer.from(JSON.stringify(manifest, null, 2)));
    if (dialect === 'sqlite') {
      const copy = path.join(tmpDir, 'parley.db');
      await backupSqlite(path.join(config.dataDir, 'parley.db'), copy);
      await addFile(pack, 'parley.db', copy);
      progress(++done, total);
    } else if (config.databaseUrl) {
      const dump = path.join(tmpDir, 'parley.dump');
      await dumpPostgres(config.databaseUrl, await currentSchema(db), dump);
      await addFile(pack, 'parley.dump', dump);
      progress(++done, total);
    }
    for (const name of SECRETS) {
      const file = path.join(config.dataDir, name);
      if (fs.existsSync(file)) await addFile(pack, name, file);
    }
    let copied = 0;
    for (const rel of files) {
      // A file removed since the listing was removed by its owner: nothing to keep.
      if (await addFile(pack, `files/${rel}`, path.join(config.dataDir, 'files', rel))) copied++;
      progress(++done, total);
    }
    pack.finalize();
    await written;
    return { files: copied };
  } catch (err) {
    pack.destroy(err as Error);
    await written.catch(() => {});
    await fsp.rm(outFile, { force: true });
    throw err;
  } finally {
    await fsp.rm(tmpDir, { recursive: true, force: true });
  }
}

async function currentSchema(db: Db): Promise<string> {
  const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(db.kysely);
  return rows[0]?.s ?? 'public';
}

/**
 * pg_dump of Parley's schema (several installations may share a database). The password
 * goes to pg_dump in its environment, never on its command line, where other users could read it.
 */
async function dumpPostgres(databaseUrl: string, schema: string, file: string): Promise<void> {
  const url = new URL(databaseUrl);
  const password = decodeURIComponent(url.password);
  url.password = '';
  // Parameters as node-postgres reads them ("+" is a space), written as libpq reads them (%20).
  const params = [...url.searchParams].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  url.search = '';
  const dbname = params ? `${url.href}?${params}` : url.href;
  // In its own schema: that schema, and the extension its search triggers call (migration 0010),
  // which lives in public; restored into a fresh database, both are created. In public: the whole
  // database, since a dump of public alone would create public again, which a fresh one has.
  const only = schema === 'public' ? [] : [`--schema=${schema}`, '--extension=unaccent'];
  const args = ['--format=custom', '--no-owner', ...only, `--file=${file}`, `--dbname=${dbname}`];
  const stderr: string[] = [];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn('pg_dump', args, {
      env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
    child.on('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new AppError(
              500,
              'backup_failed',
              "pg_dump is not installed: install postgresql-client, of the server's major version or newer",
            )
          : err,
      ),
    );
    child.on('close', resolve);
  });
  if (code !== 0) throw new AppError(500, 'backup_failed', `pg_dump failed: ${stderr.join('').trim() || `exit ${code}`}`);
}

/** Names of `parley backup --dir`: sorting them sorts them by time. */
const BACKUP_NAME = /^parley-backup-\d{8}-\d{6}-\d{3}\.tar\.gz$/;

export function backupName(at: Date): string {
  const iso = at.toISOString(); // 2026-11-29T03:15:00.123Z
  return `parley-backup-${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${iso.slice(20, 23)}.tar.gz`;
}

/**
 * Keeps the `keep` newest backups of `dir` named by {@link backupName} and removes the older ones;
 * answers the removed names. Other files of the folder are never touched.
 */
export function pruneBackups(dir: string, keep: number): string[] {
  const names = fs
    .readdirSync(dir)
    .filter((name) => BACKUP_NAME.test(name))
    .sort();
  const old = names.slice(0, Math.max(0, names.length - keep));
  for (const name of old) fs.rmSync(path.join(dir, name), { force: true });
  return old;
}

async function backupSqlite(source: string, target: string): Promise<void> {
  const { default: SQLite } = await import('better-sqlite3');
  const db = new SQLite(source, { readonly: true, fileMustExist: true });
  try {
    // Copies a batch of pages at a time, letting the server's writes in between; a write during
    // the copy restarts it from that point on, as SQLite's online backup does.
    await db.backup(target);
  } finally {
    db.close();
  }
}

/** Stored files as `<xx>/<key>` paths, leaving out puts in progress (`.tmp`). */
async function listFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  let dirs: string[];
  try {
    dirs = await fsp.readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw err;
  }
  for (const dir of dirs.sort()) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const name of (await fsp.readdir(path.join(root, dir))).sort()) out.push(`${dir}/${name}`);
  }
  return out;
}

function addBuffer(pack: tar.Pack, name: string, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) =>
    pack.entry({ name, size: body.length, mode: 0o600 }, body, (err) => (err ? reject(err) : resolve())),
  );
}

/** Streams a file into the archive; false when it no longer exists. */
async function addFile(pack: tar.Pack, name: string, file: string): Promise<boolean> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  const { size } = await handle.stat();
  const stream = handle.createReadStream({ start: 0, end: Math.max(0, size - 1) });
  await new Promise<void>((resolve, reject) => {
    const sink = pack.entry({ name, size, mode: 0o600 }, (err) => (err ? reject(err) : resolve()));
    if (size === 0) {
      stream.destroy();
      sink.end();
      return;
    }
    stream.on('error', (err) => sink.destroy(err));
    stream.pipe(sink);
  });
  return true;
}
