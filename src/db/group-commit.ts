import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { Executor } from './database.js';

interface Unit<T> {
  work: (trx: Executor) => Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

const groups = new WeakMap<Kysely<Database>, GroupCommit>();

/**
 * SQLite: the GroupCommit of a database (one per Kysely instance), shared by its writers that may
 * wait for their commit: ingests, and the webhook worker's rounds, which then take a savepoint of
 * an ingest batch's transaction instead of a commit of their own (docs/performance.md).
 */
export function groupCommitOf(db: Kysely<Database>): GroupCommit {
  let group = groups.get(db);
  if (!group) {
    group = new GroupCommit(db);
    groups.set(db, group);
  }
  return group;
}

/**
 * SQLite has a single writer: concurrent write transactions wait for each other and each pays its
 * own commit. A GroupCommit runs the units of work queued meanwhile in one transaction, each in a
 * savepoint of its own so that a failing unit rolls back alone, and settles every caller only after
 * that transaction committed: what a caller was told is stored, is stored.
 */
export class GroupCommit {
  // biome-ignore lint/suspicious/noExplicitAny: units of every result type wait in one queue; run<T>() types each one
  private queue: Unit<any>[] = [];
  private draining = false;
  /** Transactions committed so far (each holding one or more units). */
  batches = 0;
  /** Units those transactions held. */
  units = 0;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly maxBatch = 200,
  ) {}

  run<T>(work: (trx: Executor) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject });
      // Not at once: the requests that arrived in the same turn of the event loop (the others of
      // this poll phase) queue their units first, and all of them share the next transaction.
      if (!this.draining) {
        this.draining = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  /**
   * Joins `work` to the next transaction while units are queued or committing (their transaction
   * holds the connection anyway, and the commit is then shared); with none, runs it in a
   * transaction of its own at once, without waiting for the next turn of the event loop.
   */
  join<T>(work: (trx: Executor) => Promise<T>): Promise<T> {
    return this.draining ? this.run(work) : this.db.transaction().execute(work);
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.maxBatch);
        const outcomes: Outcome[] = [];
        try {
          await this.db.transaction().execute(async (trx) => {
            for (const unit of batch) {
              await sql`savepoint parley_unit`.execute(trx);
              try {
                const value = await unit.work(trx);
                await sql`release parley_unit`.execute(trx);
                outcomes.push({ ok: true, value });
              } catch (error) {
                await sql`rollback to parley_unit`.execute(trx);
                await sql`release parley_unit`.execute(trx);
                outcomes.push({ ok: false, error });
              }
            }
          });
        } catch (error) {
          // The commit itself failed: nothing of this batch is stored.
          for (const unit of batch) unit.reject(error);
          continue;
        }
        this.batches++;
        this.units += batch.length;
        batch.forEach((unit, i) => {
          const outcome = outcomes[i];
          if (outcome.ok) unit.resolve(outcome.value);
          else unit.reject(outcome.error);
        });
      }
    } finally {
      this.draining = false;
    }
  }
}
