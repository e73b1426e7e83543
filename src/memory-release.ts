import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { BackgroundWorker } from './domain/workers.js';

/** How the release reads the process and acts on it (injected in tests). */
export interface MemoryProbe {
  /** Bytes the V8 heap holds now (committed, garbage included). */
  heapHeld(): number;
  /** Bytes of the V8 heap that objects occupy now (live or not yet collected). */
  heapUsed(): number;
  /** Whether the event loop was (nearly) idle since the previous call. */
  idleSinceLastCall(): boolean;
  /** A full collection. */
  collect(): void;
}

/** A collection is worth its ~50-100 ms of CPU only once the heap grew this much since the last. */
export const RELEASE_GROWTH_BYTES = 32 * 1024 * 1024;
/**
 * Heap held beyond what objects use (empty new space, freed old-space pages) worth one more
 * collection once settled. A suite's load leaves ~15 MB of it (61 MB held for 46 MB of objects);
 * once settled, a few MB stay (new space, partly filled pages).
 */
export const RELEASE_SLACK_BYTES = 8 * 1024 * 1024;
/**
 * Idle intervals in a row before the settling collection: 7.5 s, longer than the 5 s over which V8
 * measures the allocation rate, so that its collector sees the rate as low and shrinks new space.
 */
export const SETTLE_INTERVALS = 3;
/**
 * Settling collections per idle stretch at most, one per interval. V8 gives back the old-space
 * pages a full collection emptied only in a later one (its sweeper frees them in between): one
 * collection after the suite's load left 58 MB held for 45 MB of objects.
 */
export const SETTLE_COLLECTIONS = 3;
const INTERVAL_MS = 2500;
/** Event-loop utilisation under which an interval counts as idle (1%: timers and pollers only). */
const IDLE_UTILISATION = 0.01;

/**
 * Gives back the heap a burst of load grew once the process is idle (docs/performance.md, "Start-up
 * and memory"). V8 sizes its heap for the allocation rate it saw and keeps the pages after the
 * load, garbage nobody would collect while no request allocates. Two rules, neither of which costs
 * a busy process anything:
 * - grown: one full collection in the first idle interval once the heap grew by
 *   `RELEASE_GROWTH_BYTES` since the previous collection;
 * - settled: after `SETTLE_INTERVALS` idle intervals in a row, a full collection when the heap
 *   holds `RELEASE_SLACK_BYTES` more than its objects use, again at the next intervals while the
 *   slack stays and each gave some back, at most `SETTLE_COLLECTIONS` per idle stretch. A
 *   collection during or just after the load leaves new space (up to 32 MB, sized for the load's
 *   allocation rate) as it is; V8 shrinks it only in a collection that sees a low allocation rate.
 *   This rule also catches a load that grew the heap by less than the first rule's threshold,
 *   e.g. after an idle pause between two bursts had reset its baseline.
 */
export class MemoryRelease {
  private baseline: number;
  private idleIntervals = 0;
  /** Settling collections in this idle stretch; `SETTLE_COLLECTIONS` once one gave nothing back. */
  private settles = 0;
  collections = 0;

  constructor(private readonly probe: MemoryProbe) {
    this.baseline = probe.heapHeld();
  }

  /** One look: collects when one of the rules says so; answers whether it did. */
  tick(): boolean {
    if (!this.probe.idleSinceLastCall()) {
      this.idleIntervals = 0;
      this.settles = 0;
      return false;
    }
    this.idleIntervals++;
    const held = this.probe.heapHeld();
    if (held - this.baseline >= RELEASE_GROWTH_BYTES) return this.collect();
    if (this.settles >= SETTLE_COLLECTIONS || this.idleIntervals < SETTLE_INTERVALS) return false;
    if (held - this.probe.heapUsed() < RELEASE_SLACK_BYTES) {
      this.settles = SETTLE_COLLECTIONS;
      return false;
    }
    this.settles++;
    this.collect();
    // Slack V8 keeps whatever is collected (new space it still sizes for a high rate) is not
    // collected for again in this stretch.
    if (held - this.probe.heapHeld() < RELEASE_SLACK_BYTES / 4) this.settles = SETTLE_COLLECTIONS;
    return true;
  }

  private collect(): true {
    this.probe.collect();
    this.collections++;
    this.baseline = this.probe.heapHeld();
    return true;
  }
}

/** The probe of this process: V8's heap statistics, the event loop's utilisation, V8's own `gc`. */
export function processProbe(): MemoryProbe {
  // `gc` is a V8 extension function, reachable only when the flag is on as a context is made: on
  // for the one context made here, then off again, so that no other code sees a global `gc`.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  let last = performance.eventLoopUtilization();
  return {
    heapHeld: () => v8.getHeapStatistics().total_heap_size,
    heapUsed: () => v8.getHeapStatistics().used_heap_size,
    idleSinceLastCall: () => {
      const now = performance.eventLoopUtilization();
      const delta = performance.eventLoopUtilization(now, last);
      last = now;
      return delta.utilization < IDLE_UTILISATION;
    },
    collect: gc,
  };
}

/** Runs the release every 2.5 s for the life of the process (a timer that keeps nothing alive). */
export function startMemoryRelease(probe: MemoryProbe = processProbe()): BackgroundWorker {
  const release = new MemoryRelease(probe);
  const timer = setInterval(() => release.tick(), INTERVAL_MS);
  timer.unref();
  return {
    name: 'memory-release',
    healthy: () => true,
    stop: async () => clearInterval(timer),
  };
}
