import type { Clock } from '../clock.js';

interface Window {
  count: number;
  resetAt: number;
}

/**
 * Fixed-window counters in memory, per key. Per process: with several processes each keeps its own
 * counts, which multiplies the allowance by the process count (docs/operations.md).
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Seconds until the key may try again, or 0 when it is under its limit now. */
  retryAfter(key: string): number {
    const w = this.current(key);
    if (!w || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.resetAt - this.clock.now()) / 1000));
  }

  /** Counts one hit; returns the seconds to wait when that hit went over the limit, else 0. */
  hit(key: string): number {
    const now = this.clock.now();
    let w = this.current(key);
    if (!w) {
      if (this.windows.size > 10_000) this.sweep(now);
      w = { count: 0, resetAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    w.count += 1;
    return w.count > this.limit ? Math.max(1, Math.ceil((w.resetAt - now) / 1000)) : 0;
  }

  reset(key: string): void {
    this.windows.delete(key);
  }

  private current(key: string): Window | undefined {
    const w = this.windows.get(key);
    if (w && w.resetAt <= this.clock.now()) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }

  private sweep(now: number): void {
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
  }
}
