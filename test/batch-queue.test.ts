import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchQueue, KeyedLookups, oneByOne, type LaneBatch, type Outcome } from '../src/db/batch-queue.js';

/** A handler that records its batches and finishes each when the test says so. */
function recorder() {
  const batches: number[][] = [];
  const finish: (() => void)[] = [];
  const handle = (batch: LaneBatch<number>) =>
    new Promise<Outcome<number>[]>((resolve) => {
      const units = batch.take();
      batches.push(units);
      finish.push(() => resolve(units.map((u) => (u < 0 ? { ok: false, error: new Error(`unit ${u}`) } : { ok: true, value: u * 10 }))));
    });
  return { batches, finish, handle };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Turns of the event loop until `ready` (at most ten). */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 10 && !ready(); i++) await turn();
}

describe('BatchQueue', () => {
  it('shares the units submitted together among its free lanes, and queues the rest for the next free lane', async () => {
    const r = recorder();
    const queue = new BatchQueue(r.handle, 2, 100);
    const first = [1, 2, 3, 4, 5].map((u) => queue.run(u));
    await turn();
    expect(r.batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    const later = [6, 7].map((u) => queue.run(u));
    await turn();
    expect(r.batches).toHaveLength(2);
    r.finish[1]();
    await expect(Promise.all(first.slice(3))).resolves.toEqual([40, 50]);
    await until(() => r.batches.length > 2);
    expect(r.batches[2]).toEqual([6, 7]);
    r.finish[0]();
    r.finish[2]();
    await expect(Promise.all([...first.slice(0, 3), ...later])).resolves.toEqual([10, 20, 30, 60, 70]);
    expect(queue.batches).toBe(3);
  });

  it('keeps batches within their largest size', async () => {
    const r = recorder();
    const queue = new BatchQueue(r.handle, 1, 2);
    const all = [1, 2, 3, 4, 5].map((u) => queue.run(u));
    for (let i = 0; i < 3; i++) {
      await until(() => r.batches.length > i);
      r.finish[i]();
    }
    await expect(Promise.all(all)).resolves.toEqual([10, 20, 30, 40, 50]);
    expect(r.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('settles each unit by its own outcome, and every unit of a batch whose handler threw with its error', async () => {
    const r = recorder();
    const queue = new BatchQueue(r.handle, 1, 10);
    const mixed = [queue.run(1), queue.run(-2), queue.run(3)];
    await turn();
    r.finish[0]();
    await expect(mixed[0]).resolves.toBe(10);
    await expect(mixed[1]).rejects.toThrow('unit -2');
    await expect(mixed[2]).resolves.toBe(30);

    const failing = new BatchQueue<number, number>(() => Promise.reject(new Error('the transaction failed')), 1, 10);
    const units = [failing.run(1), failing.run(2)];
    for (const unit of units) await expect(unit).rejects.toThrow('the transaction failed');
  });

  it('lets a handler take its units once it is ready: the units queued while it waited join its batch', async () => {
    // PostgreSQL ingest: a batch waits for its lane's lock, held by another process's batch.
    const lanes: number[] = [];
    const batches: number[][] = [];
    let ready = (): void => {};
    const queue = new BatchQueue<number, number>(
      async (batch) => {
        lanes.push(batch.lane);
        if (lanes.length === 1) await new Promise<void>((resolve) => (ready = resolve));
        const units = batch.take();
        batches.push(units);
        expect(batch.take()).toEqual(units);
        return units.map((u) => ({ ok: true, value: u * 10 }));
      },
      1,
      100,
    );
    const first = queue.run(1);
    await turn();
    expect(lanes).toEqual([0]);
    const later = [2, 3].map((u) => queue.run(u));
    await turn();
    const last = queue.run(4);
    await turn();
    expect(batches).toEqual([]);
    ready();
    await expect(Promise.all([first, ...later, last])).resolves.toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1, 2, 3, 4]]);
    expect(queue.batches).toBe(1);
  });

  it('numbers its lanes, and fails the units of a handler that threw before it took them', async () => {
    const lanes: number[] = [];
    const finish: (() => void)[] = [];
    const queue = new BatchQueue<number, number>(
      (batch) =>
        new Promise<Outcome<number>[]>((resolve, reject) => {
          lanes.push(batch.lane);
          finish.push(() =>
            batch.lane === 0 ? reject(new Error('no connection')) : resolve(batch.take().map((u) => ({ ok: true, value: u }))),
          );
        }),
      2,
      100,
    );
    const units = [1, 2, 3].map((u) => queue.run(u));
    await turn();
    expect(lanes).toEqual([0, 1]);
    finish[0]();
    await expect(units[0]).rejects.toThrow('no connection');
    finish[1]();
    const settled = await Promise.allSettled(units);
    // Lane 0 would have taken 1 and 2 (the queue shared between the two lanes); lane 1 took 3.
    expect(settled.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      'no connection',
      'no connection',
      3,
    ]);
  });
});

describe('KeyedLookups', () => {
  it('reads the keys asked for together once each, in one read at a time, answering each caller its key (undefined when not found)', async () => {
    const reads: string[][] = [];
    const finish: (() => void)[] = [];
    const lookups = new KeyedLookups(
      (keys: string[]) =>
        new Promise<Map<string, string>>((resolve) => {
          reads.push(keys);
          finish.push(() => resolve(new Map(keys.filter((k) => k !== 'gone').map((k) => [k, k.toUpperCase()]))));
        }),
    );
    const first = ['a', 'b', 'a', 'gone'].map((k) => lookups.find(k));
    await turn();
    expect(reads).toEqual([['a', 'b', 'gone']]);
    const later = ['c', 'a'].map((k) => lookups.find(k));
    await turn();
    expect(reads).toHaveLength(1);
    finish[0]();
    await expect(Promise.all(first)).resolves.toEqual(['A', 'B', 'A', undefined]);
    await until(() => reads.length > 1);
    expect(reads[1]).toEqual(['c', 'a']);
    finish[1]();
    await expect(Promise.all(later)).resolves.toEqual(['C', 'A']);
  });
});

describe('BatchQueue gathering', () => {
  afterEach(() => vi.useRealTimers());

  it('waits as long as `gather` says before a batch that would not be full, told how long the batches took', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'performance'] });
    const r = recorder();
    const told: number[] = [];
    const queue = new BatchQueue(r.handle, 1, 10, (batchMs) => {
      told.push(batchMs);
      return 3;
    });
    const first = queue.run(1);
    await turn();
    expect(r.batches).toEqual([]);
    const second = queue.run(2);
    vi.advanceTimersByTime(2);
    await turn();
    expect(r.batches).toEqual([]);
    vi.advanceTimersByTime(1);
    await until(() => r.batches.length > 0);
    // The units of the wait joined one batch.
    expect(r.batches).toEqual([[1, 2]]);
    vi.advanceTimersByTime(10);
    r.finish[0]();
    await expect(Promise.all([first, second])).resolves.toEqual([10, 20]);
    const third = queue.run(3);
    await turn();
    expect(told).toEqual([0, 10]);
    vi.advanceTimersByTime(3);
    await until(() => r.batches.length > 1);
    r.finish[1]();
    await expect(third).resolves.toBe(30);
  });

  it('starts a full batch at once, whatever `gather` says', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const r = recorder();
    const queue = new BatchQueue(r.handle, 1, 2, () => 1_000);
    const all = [1, 2].map((u) => queue.run(u));
    await until(() => r.batches.length > 0);
    expect(r.batches).toEqual([[1, 2]]);
    r.finish[0]();
    await expect(Promise.all(all)).resolves.toEqual([10, 20]);
  });
});

describe('oneByOne', () => {
  it('runs the units in their order, each only once the one before has settled, each to its own outcome', async () => {
    const started: number[] = [];
    const finish = new Map<number, () => void>();
    const run = (u: number) =>
      new Promise<number>((resolve, reject) => {
        started.push(u);
        finish.set(u, () => (u < 0 ? reject(new Error(`unit ${u}`)) : resolve(u * 10)));
      });
    const outcomes = oneByOne([1, -2, 3], run);
    await until(() => started.length > 0);
    await turn();
    expect(started).toEqual([1]);
    finish.get(1)!();
    await until(() => started.length > 1);
    await turn();
    expect(started).toEqual([1, -2]);
    finish.get(-2)!();
    await until(() => started.length > 2);
    finish.get(3)!();
    const settled = await outcomes;
    expect(started).toEqual([1, -2, 3]);
    expect(settled.map((o) => (o.ok ? o.value : (o.error as Error).message))).toEqual([10, 'unit -2', 30]);
  });
});
