import { describe, expect, it } from 'vitest';
import { gatherWaitMs, SequenceShare } from '../src/db/sequence-share.js';

/** A share on a clock the test moves. */
function share() {
  let now = 0;
  const s = new SequenceShare(() => now);
  return { s, at: (ms: number) => (now = ms) };
}
const range = (from: number, count: number, step = 1) => Array.from({ length: count }, (_, i) => from + i * step);

describe('SequenceShare', () => {
  it('answers 0 for a process given every id, about N - 1 when N processes take turns', () => {
    const alone = share();
    alone.s.note(range(1, 40));
    alone.s.note(range(41, 40));
    expect(alone.s.current()).toBe(0);

    const two = share();
    // Every other id went to another process, in batches of 8 each.
    for (let b = 0; b < 16; b++) two.s.note(range(1 + b * 16, 8));
    expect(two.s.current()).toBeCloseTo(1, 1);

    const three = share();
    for (let id = 1; id <= 128 * 3; id += 3) three.s.note([id]);
    expect(three.s.current()).toBeCloseTo(2, 1);
  });

  it('keeps its estimate until the next full window, and forgets it once this process has not written for a second', () => {
    const { s, at } = share();
    for (let b = 0; b < 16; b++) s.note(range(1 + b * 16, 8));
    expect(s.current()).toBeCloseTo(1, 1);
    at(500);
    s.note(range(1000, 10));
    expect(s.current()).toBeCloseTo(1, 1);
    at(1_600);
    expect(s.current()).toBe(0);
    // A window begun before the pause starts again: the ids others took meanwhile say nothing of now.
    s.note(range(5000, 64));
    expect(s.current()).toBe(0);
  });
});

describe('gatherWaitMs', () => {
  it('waits the other processes’ share of batch times, at most the cap, and not at all under half a millisecond', () => {
    expect(gatherWaitMs(0, 5, 2)).toBe(0);
    expect(gatherWaitMs(1, 1.2, 2)).toBe(1);
    expect(gatherWaitMs(1, 8, 2)).toBe(2);
    expect(gatherWaitMs(0.2, 2, 2)).toBe(0);
  });
});
