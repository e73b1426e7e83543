import { BatchQueue, type Outcome } from '../../db/batch-queue.js';
import type { Executor } from '../../db/database.js';
import { kept } from '../../db/kept.js';
import type { Clock } from '../clock.js';
import type { Deps } from '../context.js';
import { leaseCap, Leases } from './rate-leases.js';
import { deleteCounter, deleteEndedCounters, hitCounters, readCounter, type Counted, type Counter, type Hit } from './rate-limits.repo.js';

/** Where the counters of fixed windows live: this process's memory, or the shared database. */
interface CounterStore {
  hit(key: string, windowMs: number, now: number): Promise<Counter>;
  read(key: string, now: number): Promise<Counter | undefined>;
  reset(key: string): Promise<void>;
}

/** One process: counters in memory (the embedded SQLite default runs one process). */
class MemoryCounters implements CounterStore {
  private readonly windows = new Map<string, Counter>();

  async hit(key: string, windowMs: number, now: number): Promise<Counter> {
    let w = await this.read(key, now);
    if (!w) {
      if (this.windows.size > 10_000) this.sweep(now);
      w = { count: 0, resetAt: now + windowMs };
      this.windows.set(key, w);
    }
    w.count += 1;
    return { ...w };
  }

  async read(key: string, now: number): Promise<Counter | undefined> {
    const w = this.windows.get(key);
    if (w && w.resetAt <= now) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  async reset(key: string): Promise<void> {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }
}

/**
 * One statement at a time: the hits that come while it runs make the next. Two side by side made
 * more and smaller statements (0.44 against 0.39 statements per widget message with one process,
 * 0.81 against 0.71 with two; docs/performance.md), and two statements
 * counting one key wait for each other's row lock anyway.
 */
const HIT_LANES = 1;
const MAX_HITS = 500;

/**
 * The hits of every limiter of one database, batched: the requests of one turn of the event loop
 * are counted in one statement instead of one each (docs/performance.md:
 * with every widget visitor behind one address, each message's upsert of that address's row cost
 * the server and PostgreSQL ~370 µs together). Each hit is told what a statement of its own would
 * have answered.
 */
class HitBatches {
  private readonly queue: BatchQueue<{ hit: Hit; now: number }, Counted>;
  private hits = 0;

  constructor(private readonly db: Executor) {
    this.queue = new BatchQueue((batch) => this.count(batch.take()), HIT_LANES, MAX_HITS);
  }

  hit(hit: Hit, now: number): Promise<Counted> {
    this.hits += hit.second ? 2 : 1;
    // Ended windows are swept now and then so the table holds only live keys.
    if (this.hits >= 1000) {
      this.hits = 0;
      void deleteEndedCounters(this.db, now).catch(() => {});
    }
    return this.queue.run({ hit, now });
  }

  /** In order; a key counted first by one hit and second by another splits the batch there. */
  private async count(units: { hit: Hit; now: number }[]): Promise<Outcome<Counted>[]> {
    const out: Outcome<Counted>[] = [];
    let part: typeof units = [];
    const firsts = new Set<string>();
    const seconds = new Set<string>();
    const flush = async () => {
      if (!part.length) return;
      const now = Math.max(...part.map((u) => u.now));
      for (const value of await hitCounters(
        this.db,
        part.map((u) => u.hit),
        now,
      ))
        out.push({ ok: true, value });
      part = [];
      firsts.clear();
      seconds.clear();
    };
    for (const unit of units) {
      const { first, second } = unit.hit;
      if (seconds.has(first.key) || (second && firsts.has(second.key))) await flush();
      part.push(unit);
      firsts.add(first.key);
      if (second) seconds.add(second.key);
    }
    await flush();
    return out;
  }
}

const batchesOf = new WeakMap<Executor, HitBatches>();

/** Several processes on one PostgreSQL database: counters in `rate_limits`, hits batched per database. */
class SharedCounters implements CounterStore {
  private readonly batches: HitBatches;

  constructor(private readonly db: Executor) {
    this.batches = kept(batchesOf, db, () => new HitBatches(db));
  }

  async hit(key: string, windowMs: number, now: number, units = 1): Promise<Counter> {
    return (await this.batches.hit({ first: { key, windowMs, limit: Number.MAX_SAFE_INTEGER, units } }, now)).first;
  }

  hitThen(first: Hit['first'], second: NonNullable<Hit['second']>, now: number): Promise<Counted> {
    return this.batches.hit({ first, second }, now);
  }

  read(key: string, now: number): Promise<Counter | undefined> {
    return readCounter(this.db, key, now);
  }

  reset(key: string): Promise<void> {
    return deleteCounter(this.db, key);
  }
}

/**
 * Fixed-window counters per key. On PostgreSQL they live in the database, so a limit holds however
 * many processes serve it, and a hot key's hits are leased a few at a time (rate-leases.ts); on
 * SQLite (one process) in memory. `name` keeps the limiters of one store apart.
 */
export class RateLimiter {
  private readonly leases: Leases | undefined;

  constructor(
    private readonly name: string,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
    private readonly store: CounterStore = new MemoryCounters(),
  ) {
    this.leases = store instanceof SharedCounters && leaseCap(limit) > 1 ? new Leases(leaseCap(limit)) : undefined;
  }

  /** The limiter for `deps`' database: shared on PostgreSQL, in memory on SQLite. */
  static for(deps: Pick<Deps, 'db' | 'clock'>, name: string, limit: number, windowMs: number): RateLimiter {
    const store = deps.db.dialect === 'postgres' ? new SharedCounters(deps.db.kysely) : new MemoryCounters();
    return new RateLimiter(name, limit, windowMs, deps.clock, store);
  }

  /** Seconds until the key may try again, or 0 when it is under its limit now. */
  async retryAfter(key: string): Promise<number> {
    const now = this.clock.now();
    if (this.leases?.holds(`${this.name}:${key}`, now)) return 0;
    const w = await this.store.read(`${this.name}:${key}`, now);
    if (!w || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  /** Counts one hit; returns the seconds to wait when that hit went over the limit, else 0. */
  async hit(key: string): Promise<number> {
    const now = this.clock.now();
    const stored = `${this.name}:${key}`;
    if (!this.leases || !(this.store instanceof SharedCounters)) return this.wait(await this.store.hit(stored, this.windowMs, now), now);
    if (this.leases.take(stored, now) !== undefined) return 0;
    const units = this.leases.want(stored, now);
    return this.leased(stored, units, now, this.store.hit(stored, this.windowMs, now, units));
  }

  /** The wait of a database hit of `units` on `key`, its lease kept for the next hits. */
  private async leased(key: string, units: number, now: number, counting: Promise<Counter>): Promise<number> {
    let counted: Counter;
    try {
      counted = await counting;
    } catch (err) {
      this.leases?.failed(key, units);
      throw err;
    }
    this.leases?.granted(key, units, counted.count, counted.resetAt, this.limit);
    return this.wait({ count: counted.count - units + 1, resetAt: counted.resetAt }, now);
  }

  /**
   * `this.hit(key)`, and when that hit is within this limit, `next.hit(nextKey)`: the wait of the
   * first limit that refused, or 0. Two limiters sharing the database count in one statement (a
   * widget message counts against its visitor, then its address), batched with other requests' hits.
   */
  async hitThen(key: string, next: RateLimiter, nextKey: string): Promise<number> {
    const store = this.store;
    if (!(store instanceof SharedCounters) || !(next.store instanceof SharedCounters)) {
      return (await this.hit(key)) || next.hit(nextKey);
    }
    const now = this.clock.now();
    const first = `${this.name}:${key}`;
    const second = `${next.name}:${nextKey}`;
    // A leased first hit, or a second the process holds a lease of: each counts on its own, so a
    // request with both leased costs no statement.
    if (this.leases?.holds(first, now) || next.leases?.holds(second, now)) return (await this.hit(key)) || next.hit(nextKey);
    const units1 = this.leases?.want(first, now) ?? 1;
    const units2 = next.leases?.want(second, now) ?? 1;
    const counting = store.hitThen(
      { key: first, windowMs: this.windowMs, limit: this.limit, units: units1 },
      { key: second, windowMs: next.windowMs, units: units2 },
      now,
    );
    const wait = await this.leased(
      first,
      units1,
      now,
      counting.then((c) => c.first),
    ).catch((err) => {
      next.leases?.failed(second, units2);
      throw err;
    });
    const counted = await counting;
    if (!counted.second) {
      next.leases?.failed(second, units2);
      return wait;
    }
    return wait || next.leased(second, units2, now, Promise.resolve(counted.second));
  }

  private wait(w: Counter, now: number): number {
    return w.count > this.limit ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  /** Starts `key`'s window again; on PostgreSQL this process's lease of it ends too. */
  async reset(key: string): Promise<void> {
    this.leases?.drop(`${this.name}:${key}`);
    await this.store.reset(`${this.name}:${key}`);
  }
}
