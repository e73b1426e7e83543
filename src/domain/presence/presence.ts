import crypto from 'node:crypto';
import type { Deps } from '../context.js';
import type { BackgroundWorker } from '../workers.js';
import * as repo from './presence.repo.js';

/** How often a process confirms its connections; a process silent for 3 beats counts as gone (crashed). */
export const PRESENCE_BEAT_MS = 20_000;
export const PRESENCE_STALE_MS = 3 * PRESENCE_BEAT_MS;

/**
 * Which employees have an open realtime connection, across processes: each process keeps a row
 * per connected employee (with its connection count) in `realtime_presence` and refreshes it every
 * PRESENCE_BEAT_MS; rows of a process that stopped refreshing are ignored. The database is the one
 * thing every process shares, on SQLite and on PostgreSQL alike. Push reads it to reach only
 * employees who are away.
 */
export class PresenceTracker implements BackgroundWorker {
  readonly name = 'presence';
  readonly processId = crypto.randomUUID();
  private readonly counts = new Map<number, number>();
  private timer: NodeJS.Timeout | undefined;
  /** Writes in order, so a quick connect-disconnect never ends with a stale row. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly deps: Deps) {}

  /** A realtime connection of the employee opened; call the answer when it closes. */
  enter(userId: number): () => void {
    this.change(userId, 1);
    this.ensureBeating();
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.change(userId, -1);
    };
  }

  /** Resolves when every write so far is done (tests). */
  flush(): Promise<void> {
    return this.chain;
  }

  /** Confirms this process's rows; runs on a timer, and from tests. */
  beat(): Promise<void> {
    return this.write(() => repo.touchProcess(this.deps.db.kysely, this.processId, this.deps.clock.now()));
  }

  healthy(): boolean {
    return true;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.counts.clear();
    await this.write(() => repo.forgetProcess(this.deps.db.kysely, this.processId));
  }

  private change(userId: number, delta: number): void {
    const count = (this.counts.get(userId) ?? 0) + delta;
    if (count > 0) this.counts.set(userId, count);
    else this.counts.delete(userId);
    void this.write(() => repo.setPresence(this.deps.db.kysely, this.processId, userId, count, this.deps.clock.now()));
  }

  private write(fn: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(fn).catch((err: unknown) => this.deps.log.warn({ err }, 'presence write failed'));
    return this.chain;
  }

  private ensureBeating(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.beat(), PRESENCE_BEAT_MS);
    this.timer.unref();
  }
}

/** Of these employees, those connected to the realtime stream in any live process. */
export function connectedUsers(deps: Deps, userIds: number[]): Promise<Set<number>> {
  return repo.connectedUsers(deps.db.kysely, userIds, deps.clock.now() - PRESENCE_STALE_MS);
}
