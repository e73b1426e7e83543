import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';
import { dialectOf, type Executor } from './database.js';

interface Unit<T> {
  work: (trx: Executor) => Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
  /** Runs so far. */
  runs: number;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export interface GroupCommitOptions {
  /** Units per transaction at most. */
  maxBatch?: number;
  /**
   * Transactions in flight at once (always 1 on SQLite: one connection, one writer). PostgreSQL commits several at once
   * (its WAL flush is shared by the commits waiting for it), so a few lanes keep its connections
   * busy while one batch waits for its commit.
   */
  lanes?: number;
  /**
   * Errors that a unit may meet only because another transaction ran beside it (PostgreSQL: a
   * concurrent insert of the same row, a deadlock between two batches): such a unit runs again in a
   * later transaction, after this one released its locks, up to `runs` times in all.
   */
  retryable?: (error: unknown) => boolean;
  runs?: number;
}

/**
 * Concurrent write transactions each pay their own commit (SQLite: one at a time; PostgreSQL: a
 * WAL flush and a round trip each). A GroupCommit runs the units of work queued meanwhile in one
 * transaction, each in a savepoint of its own so that a failing unit rolls back alone, and settles
 * every caller only after that transaction committed: what a caller was told is stored, is stored.
 * A commit that fails rejects every unit of its batch (none of them is stored).
 */
export class GroupCommit {
  private queue: Unit<any>[] = [];
  private busyLanes = 0;
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly lanes: number;
  private readonly retryable: (error: unknown) => boolean;
  private readonly runs: number;
  /** Transactions committed so far (each holding one or more units). */
  batches = 0;

  constructor(
    private readonly db: Kysely<Database>,
    options: GroupCommitOptions | number = {},
  ) {
    const o = typeof options === 'number' ? { maxBatch: options } : options;
    this.maxBatch = o.maxBatch ?? 200;
    // SQLite's one connection holds one transaction at a time: a second lane would only wait.
    this.lanes = dialectOf(db) === 'sqlite' ? 1 : Math.max(1, o.lanes ?? 1);
    this.retryable = o.retryable ?? (() => false);
    this.runs = Math.max(1, o.runs ?? 3);
  }

  run<T>(work: (trx: Executor) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve, reject, runs: 0 });
      this.schedule();
    });
  }

  /**
   * Not at once: the requests that arrived in the same turn of the event loop (the others of this
   * poll phase) queue their units first, and all of them share the next transaction.
   */
  private schedule(): void {
    if (this.scheduled || this.busyLanes >= this.lanes || !this.queue.length) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.busyLanes >= this.lanes || !this.queue.length) return;
      this.busyLanes++;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) await this.runBatch(this.queue.splice(0, this.maxBatch));
    } finally {
      this.busyLanes--;
      this.schedule();
    }
  }

  private async runBatch(batch: typeof this.queue): Promise<void> {
    const outcomes: Outcome[] = [];
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const unit of batch) {
          unit.runs++;
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
      return;
    }
    this.batches++;
    batch.forEach((unit, i) => {
      const outcome = outcomes[i];
      if (outcome.ok) unit.resolve(outcome.value);
      else if (unit.runs < this.runs && this.retryable(outcome.error)) this.queue.push(unit);
      else unit.reject(outcome.error);
    });
  }
}
