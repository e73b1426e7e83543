import type { Deps } from '../domain/context.js';
import type { Leases } from '../domain/leases/leases.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { foldEndedReadVersions } from '../domain/leads/leads.repo.js';
import { pruneDeliveries, pruneEnded, pruneEvents } from './retention.repo.js';
import { pruneRuns } from '../domain/automation/rules.repo.js';

const DAY = 24 * 3600 * 1000;
/** Rows per delete: short transactions that never hold many locks. */
export const PRUNE_BATCH = 1000;
/** How often a process looks for history to prune. */
const EVERY_MS = 3600 * 1000;

/**
 * Deletes delivered history after PARLEY_EVENT_RETENTION_DAYS: finished webhook deliveries (with
 * their attempts), then events no delivery refers to any more — a pending delivery keeps its
 * event whatever its age. In batches of PRUNE_BATCH, one short transaction each. With several
 * processes one of them prunes at a time (lease `prune`). It also folds the lead read versions of
 * ended PostgreSQL connections (migration 0043).
 */
export class HistoryPruner implements BackgroundWorker {
  readonly name = 'history-pruner';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: Deps,
    private readonly leases: Leases,
    private readonly batch = PRUNE_BATCH,
  ) {}

  start(): void {
    if (this.deps.config.eventRetentionDays <= 0) return;
    const tick = () => {
      this.running ??= this.runOnce()
        .catch((err) => this.deps.log.warn({ err }, 'pruning history failed'))
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, EVERY_MS);
    this.timer.unref();
  }

  /** One full pass; answers the rows deleted. Nothing when retention is off or another process prunes. */
  async runOnce(): Promise<{ deliveries: number; events: number }> {
    const out = { deliveries: 0, events: 0 };
    const days = this.deps.config.eventRetentionDays;
    if (days <= 0 || !(await this.leases.hold('prune', EVERY_MS))) return out;
    const db = this.deps.db.kysely;
    const now = this.deps.clock.now();
    const cutoff = now - days * DAY;
    const batch = this.batch;
    for (let n = batch; n === batch && !this.stopped; ) out.deliveries += n = await pruneDeliveries(db, cutoff, batch);
    for (let n = batch; n === batch && !this.stopped; ) out.events += n = await pruneEvents(db, cutoff, batch);
    // Automation's runs and claims name events: they go with them.
    for (let n = batch; n === batch && !this.stopped; ) n = await pruneRuns(db, cutoff, batch);
    await pruneEnded(db, now);
    await foldEndedReadVersions(db, this.deps.db.dialect);
    return out;
  }

  healthy(): boolean {
    return !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }
}
