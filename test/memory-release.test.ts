import { describe, expect, it } from 'vitest';
import {
  MemoryRelease,
  RELEASE_GROWTH_BYTES,
  RELEASE_SLACK_BYTES,
  SETTLE_COLLECTIONS,
  SETTLE_INTERVALS,
  processProbe,
  type MemoryProbe,
} from '../src/memory-release.js';

const MB = 1024 * 1024;

/**
 * A process whose heap and event loop the test sets. A collection drops the objects to `live` and
 * the heap held to `live` plus `keptAfterCollection` (new space V8 keeps while it still counts
 * the allocation rate as high).
 */
function fakeProcess(start: number) {
  const state = { held: start, used: start, live: start, keptAfterCollection: 0, idle: false, collections: 0 };
  const probe: MemoryProbe = {
    heapHeld: () => state.held,
    heapUsed: () => state.used,
    idleSinceLastCall: () => state.idle,
    collect: () => {
      state.collections++;
      state.used = state.live;
      state.held = state.live + state.keptAfterCollection;
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

    state.used = 160 * MB;
    state.idle = true;
    state.live = 70 * MB;
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(70 * MB);
    // Idle and no growth since: no collection at every interval.
    for (let i = 0; i < 10; i++) expect(release.tick()).toBe(false);

    // A growth under the threshold, all of it objects, is left to V8.
    state.held = state.used = 70 * MB + RELEASE_GROWTH_BYTES - 1;
    expect(release.tick()).toBe(false);
    state.held = state.used = 70 * MB + RELEASE_GROWTH_BYTES;
    expect(release.tick()).toBe(true);
    expect(state.collections).toBe(2);
    expect(release.collections).toBe(2);
  });

  it('collects once more after a settled idle stretch while the heap holds much more than its objects', () => {
    const { state, probe } = fakeProcess(60 * MB);
    const release = new MemoryRelease(probe);

    // The load grew the heap; the first idle collection frees the garbage but V8 keeps new space.
    state.held = state.used = 160 * MB;
    state.live = 70 * MB;
    state.keptAfterCollection = 32 * MB;
    state.idle = true;
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(102 * MB);
    // Until the loop was idle for the settling intervals, nothing more.
    for (let i = 1; i < SETTLE_INTERVALS - 1; i++) expect(release.tick()).toBe(false);
    // Then one collection, which V8 now lets shrink new space; and none after it while idle.
    state.keptAfterCollection = 0;
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(70 * MB);
    for (let i = 0; i < 10; i++) expect(release.tick()).toBe(false);
    expect(state.collections).toBe(2);
  });

  it('settles a load that grew the heap by less than the growth threshold', () => {
    const { state, probe } = fakeProcess(100 * MB);
    const release = new MemoryRelease(probe);

    // Busy, then idle: the heap holds 28 MB more than its objects, grown by less than the threshold.
    state.held = 100 * MB + RELEASE_GROWTH_BYTES - 4 * MB;
    state.used = 72 * MB;
    state.live = 60 * MB;
    expect(release.tick()).toBe(false);
    state.idle = true;
    for (let i = 1; i < SETTLE_INTERVALS; i++) expect(release.tick()).toBe(false);
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(60 * MB);
    expect(release.collections).toBe(1);
  });

  it('settles the free pages a load leaves behind in a heap the growth rule did not collect', () => {
    // As measured after the suite's load: 61 MB held for 46 MB of objects, 15 MB of it free pages.
    const { state, probe } = fakeProcess(61 * MB);
    const release = new MemoryRelease(probe);
    state.used = state.live = 46 * MB;
    state.idle = true;
    for (let i = 1; i < SETTLE_INTERVALS; i++) expect(release.tick()).toBe(false);
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(46 * MB);
  });

  it('settles again while each collection gives pages back, at most SETTLE_COLLECTIONS times per idle stretch', () => {
    // As measured after the suite's load: one collection left 58 MB held for 45 MB of objects; V8
    // frees the pages a collection emptied only in a later one.
    const { state, probe } = fakeProcess(70 * MB);
    const release = new MemoryRelease(probe);
    state.used = state.live = 45 * MB;
    state.idle = true;
    const heldAfter = [58 * MB, 50 * MB, 47 * MB, 46 * MB];
    probe.collect = () => {
      state.collections++;
      state.held = heldAfter[state.collections - 1] ?? 46 * MB;
    };
    for (let i = 1; i < SETTLE_INTERVALS; i++) expect(release.tick()).toBe(false);
    expect(release.tick()).toBe(true);
    expect(state.held).toBe(58 * MB);
    expect(release.tick()).toBe(true); // 13 MB of slack left: the pages the first one emptied
    expect(state.held).toBe(50 * MB);
    // 5 MB of slack: under the threshold, so no more in this stretch.
    for (let i = 0; i < 10; i++) expect(release.tick()).toBe(false);
    expect(state.collections).toBe(2);

    // A heap that keeps giving back: bounded per stretch, and again in the next stretch.
    state.held = 75 * MB; // grown by less than RELEASE_GROWTH_BYTES
    heldAfter.splice(0, heldAfter.length, 70 * MB, 67 * MB, 64 * MB, 61 * MB, 58 * MB, 55 * MB, 52 * MB);
    state.collections = 0;
    state.idle = false;
    release.tick();
    state.idle = true;
    for (let i = 0; i < 10 * SETTLE_INTERVALS; i++) release.tick();
    expect(state.collections).toBe(SETTLE_COLLECTIONS);
    state.idle = false;
    release.tick();
    state.idle = true;
    for (let i = 0; i < 10 * SETTLE_INTERVALS; i++) release.tick();
    expect(state.collections).toBe(2 * SETTLE_COLLECTIONS);
  });

  it('does not settle a heap with little slack, and settles at most once per idle stretch', () => {
    const { state, probe } = fakeProcess(80 * MB);
    const release = new MemoryRelease(probe);

    state.idle = true;
    state.used = 80 * MB - RELEASE_SLACK_BYTES + 1;
    for (let i = 0; i < 2 * SETTLE_INTERVALS; i++) expect(release.tick()).toBe(false);
    expect(state.collections).toBe(0);

    // Slack that one collection cannot give back (V8 keeps it) costs one collection per idle
    // stretch, not one per interval.
    state.used = 50 * MB;
    state.live = 50 * MB;
    state.keptAfterCollection = 30 * MB;
    for (let i = 0; i < 2 * SETTLE_INTERVALS; i++) release.tick();
    expect(state.collections).toBe(0); // this stretch had already settled
    state.idle = false;
    release.tick();
    state.idle = true;
    for (let i = 0; i < 4 * SETTLE_INTERVALS; i++) release.tick();
    expect(state.collections).toBe(1);
  });

  it("collects with V8's own collector in this process without exposing a global gc", () => {
    const probe = processProbe();
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
    let garbage: Array<{ n: number; s: string }> | undefined = Array.from({ length: 400_000 }, (_, n) => ({ n, s: `text ${n}` }));
    const grown = probe.heapHeld();
    expect(garbage.length).toBe(400_000);
    garbage = undefined;
    const usedBefore = probe.heapUsed();
    probe.collect();
    expect(probe.heapHeld()).toBeLessThan(grown);
    expect(probe.heapUsed()).toBeLessThan(usedBefore);
    expect(probe.heapUsed()).toBeLessThanOrEqual(probe.heapHeld());
  });
});
