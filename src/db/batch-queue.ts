import type { Executor } from './database.js';
import { kept } from './kept.js';

/** What became of one unit of a batch. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Queued<U, R> {
  unit: U;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

/** One batch a lane runs: the lane's index, and the queued units the batch takes when it is ready. */
export interface LaneBatch<U> {
  /** The lane running the batch, from 0 to the queue's lanes - 1. */
  readonly lane: number;
  /**
   * Takes the batch's units off the queue, at most the queue's largest batch (the free lanes share
   * what is queued); the same units when asked again. A handler that first waits for something
   * (a lock) takes them after: the units queued meanwhile join the batch.
   */
  take(): U[];
}

/**
 * Gathers the units of work that callers submit at about the same time into batches, and runs up
 * to `lanes` batches side by side (PostgreSQL ingest: docs/performance.md). The units queued when a lane frees are shared among the free lanes, so under load the
 * database works on one batch while this process prepares the next, and a batch grows with the
 * load instead of waiting for a timer. `handle` takes its batch's units (`LaneBatch.take`) and
 * answers one outcome per unit, in order; when it throws, every unit of its batch fails with that
 * error. Each caller is settled only when its batch's handler returned: what a caller is told is
 * stored, is stored.
 */
export class BatchQueue<U, R> {
  private queue: Queued<U, R>[] = [];
  /** The lanes not running a batch, by index. */
  private readonly free: number[];
  /** Batches started that have not taken their units yet. */
  private untaken = 0;
  private scheduled = false;
  /** Batches started so far. */
  batches = 0;
  /** How long a batch's handler took, smoothed over the last few (ms). */
  private batchMs = 0;
  /** The timer of a lane gathering units before its batch. */
  private gathering: ReturnType<typeof setTimeout> | undefined;

  /**
   * `gather`: how long a free lane waits before it starts a batch that would not be full, given
   * how long a batch takes (ms; 0 or none: the next turn of the event loop). A wait lets the units
   * of the next moments join the batch: fewer, larger batches, each unit answered later.
   */
  constructor(
    private readonly handle: (batch: LaneBatch<U>) => Promise<Outcome<R>[]>,
    lanes: number,
    private readonly maxBatch: number,
    private readonly gather?: (batchMs: number) => number,
  ) {
    if (!(lanes >= 1 && maxBatch >= 1)) throw new Error('a batch queue needs at least one lane and one unit per batch');
    this.free = Array.from({ length: lanes }, (_, i) => lanes - 1 - i);
  }

  run(unit: U): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ unit, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    const full = this.queue.length - this.untaken >= this.maxBatch;
    // A batch that filled while its lane gathered starts now.
    if (this.gathering && full) {
      clearTimeout(this.gathering);
      this.gathering = undefined;
      this.scheduled = false;
    }
    if (this.scheduled || !this.free.length || this.queue.length <= this.untaken) return;
    this.scheduled = true;
    const go = () => {
      this.gathering = undefined;
      this.scheduled = false;
      this.start();
    };
    const wait = !full && this.gather ? this.gather(this.batchMs) : 0;
    // Not at once: the units submitted in the same turn of the event loop (the other requests of
    // this poll phase) are queued first and share the batches.
    if (wait > 0) this.gathering = setTimeout(go, wait);
    else setImmediate(go);
  }

  private start(): void {
    // A batch that has not taken its units yet counts one unit: it takes at least that.
    while (this.free.length && this.queue.length > this.untaken) {
      const lane = this.free.pop() as number;
      this.untaken++;
      this.batches++;
      void this.settle(lane).finally(() => {
        this.free.push(lane);
        this.schedule();
      });
    }
  }

  private async settle(lane: number): Promise<void> {
    let batch: Queued<U, R>[] | undefined;
    const taken = (): Queued<U, R>[] => {
      if (!batch) {
        this.untaken--;
        // Shared with the lanes that have not taken theirs yet, and those free now.
        const sharers = 1 + this.untaken + this.free.length;
        batch = this.queue.splice(0, Math.min(this.maxBatch, Math.ceil(this.queue.length / sharers)));
      }
      return batch;
    };
    let outcomes: Outcome<R>[];
    const started = performance.now();
    try {
      outcomes = await this.handle({ lane, take: () => taken().map((queued) => queued.unit) });
    } catch (error) {
      for (const queued of taken()) queued.reject(error);
      return;
    } finally {
      const ms = performance.now() - started;
      this.batchMs = this.batchMs ? 0.8 * this.batchMs + 0.2 * ms : ms;
    }
    taken().forEach((queued, i) => {
      const outcome = outcomes[i];
      if (!outcome) queued.reject(new Error('a batch handler answered fewer outcomes than units'));
      else if (outcome.ok) queued.resolve(outcome.value);
      else queued.reject(outcome.error);
    });
  }
}

/**
 * Runs a failed batch's units on their own, one after another in the batch's order, each to its
 * own outcome: what was submitted first is stored first (message ids and history follow the
 * order of arrival), and a customer's messages do not race each other for its rows.
 */
export async function oneByOne<U, R>(units: U[], run: (unit: U) => Promise<R>): Promise<Outcome<R>[]> {
  const outcomes: Outcome<R>[] = [];
  for (const unit of units) {
    try {
      outcomes.push({ ok: true, value: await run(unit) });
    } catch (error) {
      outcomes.push({ ok: false, error });
    }
  }
  return outcomes;
}

/** What one look-up batch holds at most (a statement's array parameter). */
const MAX_LOOKUPS = 200;

/**
 * Look-ups by key that callers submit at about the same time, answered together by one read of
 * all their keys (PostgreSQL: one statement instead of one each; docs/performance.md). One batch at a time: the look-ups that come meanwhile make the
 * next. A key the read does not answer is undefined. Callers asking for the same key in one batch
 * share the value: they must not mutate it.
 */
export class KeyedLookups<K, V> {
  private readonly queue: BatchQueue<K, V | undefined>;

  constructor(read: (keys: K[]) => Promise<Map<K, V>>) {
    this.queue = new BatchQueue(
      async (batch) => {
        const keys = batch.take();
        const found = await read([...new Set(keys)]);
        return keys.map((key): Outcome<V | undefined> => ({ ok: true, value: found.get(key) }));
      },
      1,
      MAX_LOOKUPS,
    );
  }

  find(key: K): Promise<V | undefined> {
    return this.queue.run(key);
  }
}

/**
 * Look-ups of rows by bigint id, one {@link KeyedLookups} per executor: the function answered,
 * called with `(db, id)`, answers the row of `id` that a batch of `read` found, undefined for
 * none (PostgreSQL lead and integration reads). An id that is not a positive safe
 * integer finds nothing without joining a batch: beyond bigint it would fail the batch's statement
 * for every caller. Callers asking for the same id in one batch share the row: they must not
 * mutate it.
 */
export function lookupsById<R extends { id: number }>(
  read: (db: Executor, ids: number[]) => Promise<R[]>,
): (db: Executor, id: number) => Promise<R | undefined> {
  const lookupsOf = new WeakMap<Executor, KeyedLookups<number, R>>();
  return async (db, id) => {
    if (!Number.isSafeInteger(id) || id < 1) return undefined;
    const lookups = kept(
      lookupsOf,
      db,
      () => new KeyedLookups(async (ids: number[]) => new Map((await read(db, ids)).map((row) => [row.id, row]))),
    );
    return lookups.find(id);
  };
}
