import type { Logger } from '../context.js';
import type { BackgroundWorker } from '../workers.js';

/**
 * A background worker that runs one unit of work now, then every `intervalMs`, and at once when
 * woken (a job was queued in this process). Runs never overlap. A failed run is logged and marks
 * the worker unhealthy until a run succeeds.
 */
export class PeriodicWorker implements BackgroundWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private ok = true;

  constructor(
    readonly name: string,
    private readonly work: () => Promise<unknown>,
    private readonly intervalMs: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.work()
      .then(() => {
        this.ok = true;
      })
      .catch((err: unknown) => {
        this.ok = false;
        this.log.error({ err, worker: this.name }, 'background work failed');
      })
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
          return;
        }
        this.timer = setTimeout(() => this.wake(), this.intervalMs);
        this.timer.unref();
      });
  }

  healthy(): boolean {
    return this.ok;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}

/** Export jobs and their expiry; retention sweeps. */
export function dataWorkers(services: {
  exports: { runPending(): Promise<number>; expire(): Promise<number>; onQueued: () => void };
  retention: { sweep(): Promise<unknown> };
  deps: { config: { retentionIntervalMinutes: number }; log: Logger };
}): PeriodicWorker[] {
  const { exports, retention, deps } = services;
  const exportWorker = new PeriodicWorker(
    'account-exports',
    async () => {
      await exports.runPending();
      await exports.expire();
    },
    30_000,
    deps.log,
  );
  exports.onQueued = () => exportWorker.wake();
  const retentionWorker = new PeriodicWorker('retention', () => retention.sweep(), deps.config.retentionIntervalMinutes * 60_000, deps.log);
  return [exportWorker, retentionWorker];
}
