import type { Executor } from '../../db/database.js';
import type { Clock } from '../clock.js';
import type { Deps } from '../context.js';
import { deleteCounter, deleteEndedCounters, hitCounter, hitCounterThen, readCounter, type Counter } from './rate-limits.repo.js';

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

/** Several processes on one PostgreSQL database: counters in `rate_limits`, one upsert per hit. */
class SharedCounters implements CounterStore {
  private hits = 0;

  constructor(private readonly db: Executor) {}

  hit(key: string, windowMs: number, now: number): Promise<Counter> {
    // Ended windows are swept now and then so the table holds only live keys.
    if (++this.hits % 1000 === 0) void deleteEndedCounters(this.db, now).catch(() => {});
    return hitCounter(this.db, key, windowMs, now);
  }

  hitThen(
    first: { key: string; windowMs: number; limit: number },
    second: { key: string; windowMs: number },
    now: number,
  ): Promise<{ first: Counter; second: Counter | undefined }> {
    this.hits += 2;
    return hitCounterThen(this.db, first, second, now);
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
 * many processes serve it; on SQLite (one process) in memory. `name` keeps the limiters of one
 * store apart.
 */
export class RateLimiter {
  constructor(
    private readonly name: string,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
    private readonly store: CounterStore = new MemoryCounters(),
  ) {}

  /** The limiter for `deps`' database: shared on PostgreSQL, in memory on SQLite. */
  static for(deps: Pick<Deps, 'db' | 'clock'>, name: string, limit: number, windowMs: number): RateLimiter {
    const store = deps.db.dialect === 'postgres' ? new SharedCounters(deps.db.kysely) : new MemoryCounters();
    return new RateLimiter(name, limit, windowMs, deps.clock, store);
  }

  /** Seconds until the key may try again, or 0 when it is under its limit now. */
  async retryAfter(key: string): Promise<number> {
    const now = this.clock.now();
    const w = await this.store.read(`${this.name}:${key}`, now);
    if (!w || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
  }

  /** Counts one hit; returns the seconds to wait when that hit went over the limit, else 0. */
  async hit(key: string): Promise<number> {
    const now = this.clock.now();
    return this.wait(await this.store.hit(`${this.name}:${key}`, this.windowMs, now), now);
  }

  /**
   * `this.hit(key)`, and when that hit is within this limit, `next.hit(nextKey)`: the wait of the
   * first limit that refused, or 0. Two limiters sharing the database count in one statement (a
   * widget message counts against its visitor, then its address: one round trip, not two).
   */
  async hitThen(key: string, next: RateLimiter, nextKey: string): Promise<number> {
    const store = this.store;
    if (!(store instanceof SharedCounters) || !(next.store instanceof SharedCounters)) {
      return (await this.hit(key)) || next.hit(nextKey);
    }
    const now = this.clock.now();
    const counted = await store.hitThen(
      { key: `${this.name}:${key}`, windowMs: this.windowMs, limit: this.limit },
      { key: `${next.name}:${nextKey}`, windowMs: next.windowMs },
      now,
    );
    return this.wait(counted.first, now) || (counted.second ? next.wait(counted.second, now) : 0);
  }

  private wait(w: Counter, now: number): number {
    return w.count > this.limit ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  async reset(key: string): Promise<void> {
    await this.store.reset(`${this.name}:${key}`);
  }
}
