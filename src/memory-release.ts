import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { BackgroundWorker } from './domain/workers.js';

/** How the release reads the process and acts on it (injected in tests). */
export interface MemoryProbe {
  /** Bytes the V8 heap holds now (committed, garbage included). */
  heapHeld(): number;
  /** Whether the event loop was (nearly) idle since the previous call. */
  idleSinceLastCall(): boolean;
  /** A full collection. */
  collect(): void;
}

/** A collection is worth its ~50-100 ms of CPU only once the heap grew this much since the last. */
export const RELEASE_GROWTH_BYTES = 32 * 1024 * 1024;
const INTERVAL_MS = 2500;
/** Event-loop utilisation under which an interval counts as idle (1%: timers and pollers only). */
const IDLE_UTILISATION = 0.01;

/**
 * Gives back the heap a burst of load grew once the process is idle (docs/performance.md, "Start-up
 * and memory"). V8 sizes its heap for the allocation rate it saw and keeps the pages after the
 * load: on the suite's load the server held ~160 MB of heap for ~90 MB of objects, most of them
 * garbage nobody would collect while no request allocates. One full collection when the loop has
 * been idle for an interval, and only after the heap grew by `RELEASE_GROWTH_BYTES` since the
 * previous one, frees it without costing a busy process anything.
 */
export class MemoryRelease {
  private baseline: number;
  collections = 0;

  constructor(private readonly probe: MemoryProbe) {
    this.baseline = probe.heapHeld();
  }

  /** One look: collects when idle and grown; answers whether it did. */
  tick(): boolean {
    const idle = this.probe.idleSinceLastCall();
    if (!idle || this.probe.heapHeld() - this.baseline < RELEASE_GROWTH_BYTES) return false;
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
