import type { Executor } from '../../db/database.js';
import type { FilesService } from '../files/files.service.js';
import type { SourceClient } from './source-client.js';
import type { AttachmentSource } from './attachment-fetcher.js';
import { isUniqueViolation, isUnstorableValue } from '../../db/errors.js';
import * as repo from './migration.repo.js';

/** What a run of `parley migrate` did (printed at the end): counts per kind, and what was not copied and why. */
export interface MigrationReport {
  accountId: number | undefined;
  /** Records copied by this run, per kind (a dry run: the records it would copy). */
  copied: Record<string, number>;
  /** Records the source answered that were already copied by an earlier run (or updated). */
  unchanged: Record<string, number>;
  /** Items that could not be copied: kind, the source's id, and why. */
  skipped: Array<{ kind: string; id: string; reason: string }>;
  /** Webhooks of the source, to be registered again here (their secrets cannot be copied). */
  webhooks: string[];
  /** Invitations that could not be e-mailed. */
  invitationsNotSent: string[];
  interrupted: boolean;
}

export function emptyReport(): MigrationReport {
  return { accountId: undefined, copied: {}, unchanged: {}, skipped: [], webhooks: [], invitationsNotSent: [], interrupted: false };
}

export type PhaseProgress = (phase: string, done: number, total: number) => void;

/** Everything the phases share. */
export interface MigrationContext {
  db: Executor;
  client: SourceClient;
  files: FilesService;
  accountId: number;
  ids: IdBook;
  dryRun: boolean;
  since: number | undefined;
  concurrency: number;
  /** Attachment downloads (attachment-fetcher.ts). */
  fileSource: AttachmentSource;
  report: MigrationReport;
  progress: PhaseProgress;
  signal: AbortSignal | undefined;
  now(): number;
}

export type MapEntry = [kind: string, sourceId: string, targetId: string | number];

/**
 * Runs `fn` in one transaction with the mappings it records (`map`): the rows and their mappings
 * commit together, and are remembered in memory only once committed.
 */
export async function transact<T>(ctx: MigrationContext, fn: (trx: Executor, map: (...entry: MapEntry) => void) => Promise<T>): Promise<T> {
  const entries: MapEntry[] = [];
  const result = await ctx.db.transaction().execute(async (trx) => {
    const r = await fn(trx, (...entry) => void entries.push(entry));
    await ctx.ids.write(trx, entries);
    return r;
  });
  for (const [kind, sourceId, target] of entries) ctx.ids.remember(kind, sourceId, String(target));
  return result;
}

/**
 * Runs one item's writes; a value the database cannot store (PostgreSQL: NUL, out of range) or a
 * clash with a row already here skips that item, reported, and the run goes on.
 */
export async function orSkip(ctx: MigrationContext, kind: string, id: string, fn: () => Promise<void>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (err) {
    if (!isUnstorableValue(err) && !isUniqueViolation(err)) throw err;
    skip(ctx.report, kind, id, `the database refused it: ${(err as Error).message.slice(0, 200)}`);
    return false;
  }
}

export function count(report: MigrationReport, kind: string, copied = true, n = 1): void {
  if (n === 0) return;
  const bucket = copied ? report.copied : report.unchanged;
  bucket[kind] = (bucket[kind] ?? 0) + n;
}

export function skip(report: MigrationReport, kind: string, id: string, reason: string): void {
  report.skipped.push({ kind, id, reason });
}

/**
 * Source id -> our id, per kind, loaded once from `migration_ids` and kept in step with it: a
 * mapping is written in the transaction of the row it maps (see `put`), so a run killed at any point
 * leaves no copied row unmapped and no mapping without its row.
 */
export class IdBook {
  private readonly maps = new Map<string, Map<string, string>>();

  constructor(private readonly accountId: number) {}

  static async load(db: Executor, accountId: number): Promise<IdBook> {
    const book = new IdBook(accountId);
    for (const row of await repo.loadIds(db, accountId)) book.remember(row.kind, row.source_id, row.target_id);
    return book;
  }

  get(kind: string, sourceId: string): string | undefined {
    return this.maps.get(kind)?.get(sourceId);
  }

  num(kind: string, sourceId: string | null | undefined): number | undefined {
    if (sourceId === null || sourceId === undefined) return undefined;
    const v = this.get(kind, sourceId);
    return v === undefined ? undefined : Number(v);
  }

  /** Writes mappings in the caller's transaction; {@link transact} remembers them once it commits. */
  async write(db: Executor, entries: MapEntry[]): Promise<void> {
    await repo.insertIds(
      db,
      entries.map(([kind, source_id, target]) => ({ account_id: this.accountId, kind, source_id, target_id: String(target) })),
    );
  }

  /** Only in memory: a dry run, or after the transaction that wrote them committed. */
  remember(kind: string, sourceId: string, targetId: string): void {
    let map = this.maps.get(kind);
    if (!map) {
      map = new Map();
      this.maps.set(kind, map);
    }
    map.set(sourceId, targetId);
  }
}

/** Runs `fn` over `items` with at most `n` at a time; stops taking new items once `signal` aborts. */
export async function pool<T>(items: T[], n: number, signal: AbortSignal | undefined, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal?.aborted) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, worker));
}
