import { describe, expect, it } from 'vitest';
import { MemoryRelease, RELEASE_GROWTH_BYTES, processProbe, type MemoryProbe } from '../src/memory-release.js';

const MB = 1024 * 1024;

/** A process whose heap and event loop the test sets; a collection drops the heap to `live`. */
function fakeProcess(start: number) {
  const state = { held: start, live: start, idle: false, collections: 0 };
  const probe: MemoryProbe = {
    heapHeld: () => state.held,
    idleSinceLastCall: () => state.idle,
    collect: () => {
      state.collections++;
      state.held = state.live;
    },
  };
  return { state, probe };
}

describe('memory release', () => {
  it('collects once the loop is idle after the heap grew, and not again until it grows again', () => {
    const { state, probe } = fakeProcess(60 * MB);
    const release = new MemoryRelease(probe);

    state.held = 160 * MB; // a burst of load grew the heap
    expect(release.tick()).toBe(false); // still busy: nothing happens while requests allocate
    expect(state.collections).toBe(0);

    state.idle = true;
    state.live = 70 * MB;
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(70 * MB);
    // Idle and no growth since: no collection at every interval.
    for (let i = 0; i < 10; i++) expect(release.tick()).toBe(false);

    // A growth under the threshold is left to V8.
    state.held = 70 * MB + RELEASE_GROWTH_BYTES - 1;
    expect(release.tick()).toBe(false);
    state.held = 70 * MB + RELEASE_GROWTH_BYTES;
    expect(release.tick()).toBe(true);
    expect(state.collections).toBe(2);
    expect(release.collections).toBe(2);
  });

  it("collects with V8's own collector in this process without exposing a global gc", () => {
    const probe = processProbe();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    let garbage: Array<{ n: number; s: string }> | undefined = Array.from({ length: 400_000 }, (_, n) => ({ n, s: `text ${n}` }));
    const grown = probe.heapHeld();
    expect(garbage.length).toBe(400_000);
    garbage = undefined;
    probe.collect();
    expect(probe.heapHeld()).toBeLessThan(grown);
  });
});
