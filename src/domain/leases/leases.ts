import crypto from 'node:crypto';
import type { Deps } from '../context.js';
import { acquireLease, releaseLease } from './leases.repo.js';

/**
 * Named leases in the shared database: work that only one process may do at a time (a bot's long
 * poll: its provider answers 409 to a second consumer) is done by the process that holds the lease.
 * A holder renews before each round; a process that dies loses the lease when it expires, and
 * another takes over. A table rather than PostgreSQL advisory locks: those belong to a session,
 * which a pooled connection is not, and the table works the same on SQLite (one process) and
 * reads the injected clock.
 */
export class Leases {
  /** This process, as lease holder. */
  readonly holder = `${process.pid}-${crypto.randomUUID()}`;
  private readonly held = new Set<string>();

  constructor(private readonly deps: Pick<Deps, 'db' | 'clock'>) {}

  /** Takes or renews `name` for `ttlMs` from now; false while another process holds it. */
  async hold(name: string, ttlMs: number): Promise<boolean> {
    const now = this.deps.clock.now();
    const granted = await acquireLease(this.deps.db.kysely, name, this.holder, now, now + ttlMs);
    if (granted) this.held.add(name);
    else this.held.delete(name);
    return granted;
  }

  async release(name: string): Promise<void> {
    this.held.delete(name);
    await releaseLease(this.deps.db.kysely, name, this.holder);
  }

  /** Gives up every lease this process holds (on shutdown, so others take over at once). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.held].map((name) => this.release(name).catch(() => {})));
  }
}
