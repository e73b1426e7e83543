/**
 * Hits a process took from a key's shared window ahead of its requests (docs/operations.md,
 * "PostgreSQL and several processes"): a hot key costs a statement per lease instead of one per
 * batch of its hits. A lease starts at the hit itself and doubles with each refill in one window, up to
 * `leaseCap(limit)`; it ends with its window. The database counted a lease's hits when it gave
 * them, and only those within the limit, so the limit stays an upper bound across processes; the
 * price is that hits one process leased and did not use are refused to the others.
 */

/** A lease is at most this share of the limit, so little of a window can sit unused in one process. */
const LEASE_SHARE = 0.05;
/** And at most this many hits: past it a statement per lease costs little against the requests. */
const LEASE_MAX = 100;
/** Keys with a lease kept per limiter; past it ended windows are swept, then every lease dropped. */
const MAX_KEYS = 10_000;

/** The most hits one lease of a key limited to `limit` takes: 1 (no lease) below 40. */
export function leaseCap(limit: number): number {
  return Math.max(1, Math.min(LEASE_MAX, Math.floor(limit * LEASE_SHARE)));
}

interface Lease {
  /** The end of the window the hits were leased in (0 before the first answer). */
  resetAt: number;
  /** Hits leased and not yet used. */
  left: number;
  /** The hits the last refill asked for. */
  size: number;
  /** A refill is under way (one at a time: the key's other hits meanwhile count one each). */
  pending: boolean;
}

export class Leases {
  private readonly held = new Map<string, Lease>();

  constructor(private readonly cap: number) {}

  /** Takes one leased hit of `key`: the end of its window, or undefined when none is held for `now`. */
  take(key: string, now: number): number | undefined {
    const lease = this.held.get(key);
    if (!lease) return undefined;
    if (lease.resetAt <= now && !lease.pending) {
      // A new window: the key starts cold again.
      this.held.delete(key);
      return undefined;
    }
    if (lease.left <= 0 || lease.resetAt <= now) return undefined;
    lease.left -= 1;
    return lease.resetAt;
  }

  /** Whether a hit of `key` at `now` would be taken from a lease. */
  holds(key: string, now: number): boolean {
    const lease = this.held.get(key);
    return !!lease && lease.left > 0 && lease.resetAt > now;
  }

  /**
   * The hits the next database hit of `key` asks for: the hit itself, and when the key came back
   * within its window with its lease used, a lease twice the last one (capped). Each call
   * answering more than 1 must be followed by `granted` or `failed`.
   */
  want(key: string, now: number): number {
    if (this.cap <= 1) return 1;
    let lease = this.held.get(key);
    if (lease?.pending) return 1;
    if (!lease || (lease.resetAt && lease.resetAt <= now)) {
      if (this.held.size >= MAX_KEYS) this.sweep(now);
      lease = { resetAt: 0, left: 0, size: 1, pending: false };
      this.held.set(key, lease);
    } else {
      lease.size = Math.min(this.cap, lease.size * 2);
    }
    if (lease.size > 1) lease.pending = true;
    return lease.size;
  }

  /**
   * The answer to a hit of `key` that asked for `units`: `count` is what the key's window held after
   * them. The first unit is the hit; the others within `limit` are the lease.
   */
  granted(key: string, units: number, count: number, resetAt: number, limit: number): void {
    const lease = this.held.get(key);
    if (!lease) return;
    if (units <= 1) {
      // A hit of its own (the key's first, or beside a refill): it tells the window only.
      if (lease.resetAt !== resetAt && !lease.pending) Object.assign(lease, { resetAt, left: 0 });
      return;
    }
    lease.pending = false;
    const within = Math.max(0, Math.min(units, limit - (count - units)));
    const extra = Math.max(0, within - 1);
    if (lease.resetAt !== resetAt) {
      lease.resetAt = resetAt;
      lease.left = extra;
    } else lease.left += extra;
  }

  /** A refill that got no answer: nothing leased. */
  failed(key: string, units: number): void {
    const lease = this.held.get(key);
    if (lease && units > 1) lease.pending = false;
  }

  drop(key: string): void {
    this.held.delete(key);
  }

  private sweep(now: number): void {
    for (const [key, lease] of this.held) if (lease.resetAt <= now && !lease.pending) this.held.delete(key);
    // Dropping leases only refuses hits early (their hits stay counted), never admits more.
    if (this.held.size >= MAX_KEYS) this.held.clear();
  }
}
