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
  /** Requests to the source's API per kind (tries included), and the retries and 429s among them. */
  requests: { byKind: Record<string, number>; retries: number; rateLimited: number };
  /** Attachment downloads tried (file URLs: not API requests, not spaced by `--rate`). */
  downloads: number;
  interrupted: boolean;
}

export function emptyReport(): MigrationReport {
  return {
    accountId: undefined,
    copied: {},
    unchanged: {},
    skipped: [],
    webhooks: [],
    invitationsNotSent: [],
    requests: { byKind: {}, retries: 0, rateLimited: 0 },
    downloads: 0,
    interrupted: false,
  };
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

/**
 * Writes `items` in one transaction; when the database refuses one of them (a value it cannot
 * store, a clash: see {@link orSkip}), each again in a transaction of its own, so that only the
 * refused one is skipped. `write` must leave the report alone (it may run twice for an item);
 * answers the items stored.
 */
export async function writeBatch<T>(
  ctx: MigrationContext,
  items: T[],
  kind: string,
  idOf: (item: T) => string,
  write: (trx: Executor, map: (...entry: MapEntry) => void, items: T[]) => Promise<void>,
): Promise<T[]> {
  if (!items.length) return items;
  try {
    await transact(ctx, (trx, map) => write(trx, map, items));
    return items;
  } catch (err) {
    if (!isUnstorableValue(err) && !isUniqueViolation(err)) throw err;
  }
  const stored: T[] = [];
  for (const item of items)
    if (await orSkip(ctx, kind, idOf(item), () => transact(ctx, (trx, map) => write(trx, map, [item])))) stored.push(item);
  return stored;
}

/** `map`'s value at `key`, which the caller made sure is there (an Error names a bug otherwise). */
export function present<K, V>(map: { get(key: K): V | undefined }, key: K, what: string): V {
  const v = map.get(key);
  if (v === undefined) throw new Error(`parley migrate: no ${what} for ${String(key)}`);
  return v;
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

/**
 * Collects items and writes them `size` at a time, one write after another (one transaction per
 * batch: a commit per record was the cost of a migration). The caller whose item fills a batch
 * waits for its write, so readers stay at most a batch or two ahead of the database; the others
 * go on reading meanwhile. `flush` writes what is left and answers once every write is done; a
 * failed write fails every later `add` and `flush`.
 */
export class Batcher<T> {
  private items: T[] = [];
  private weight = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly size: number,
    private readonly write: (items: T[]) => Promise<void>,
  ) {}

  /** Adds an item of `weight` (messages of a history, say); writes the batch once it reaches `size`. */
  async add(item: T, weight = 1): Promise<void> {
    this.items.push(item);
    this.weight += weight;
    if (this.weight >= this.size) await this.flush();
  }

  flush(): Promise<void> {
    const batch = this.items;
    this.items = [];
    this.weight = 0;
    if (batch.length) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }
}

/** At most `n` callers of `run` at a time (attachment downloads of all leads together). */
export class Limit {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly n: number) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.n) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

/** Runs `fn` over `items` with at most `n` at a time; stops taking new items once `signal` aborts or one fails. */
export async function pool<T>(items: T[], n: number, signal: AbortSignal | undefined, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (next < items.length && !signal?.aborted && !failed) {
      try {
        await fn(items[next++]);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  // Every worker ends before the pool does (none is left writing after a failure or an interrupt).
  const ends = await Promise.allSettled(Array.from({ length: Math.max(1, Math.min(n, items.length)) }, worker));
  const first = ends.find((e) => e.status === 'rejected');
  if (first) throw first.reason;
}
