import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Leases } from '../src/domain/leases/leases.js';
import { createHarness, type Harness } from './helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

describe('leases', () => {
  it('one holder at a time: renewed by its holder, taken over after it expires, free at once when released', async () => {
    // Two processes' lease holders on one database.
    const a = new Leases(h.services.deps);
    const b = new Leases(h.services.deps);
    expect(a.holder).not.toBe(b.holder);
    const racing = await Promise.all([a.hold('bot:1', 10_000), b.hold('bot:1', 10_000)]);
    expect(racing.filter(Boolean)).toHaveLength(1);
    const [first, second] = racing[0] ? [a, b] : [b, a];

    h.clock.advance(9_000);
    expect(await first.hold('bot:1', 10_000)).toBe(true);
    h.clock.advance(9_000);
    expect(await second.hold('bot:1', 10_000)).toBe(false);
    expect(await second.hold('bot:2', 10_000)).toBe(true);

    // The holder stopped renewing (a dead process): the lease expires and the other takes it.
    h.clock.advance(10_001);
    expect(await second.hold('bot:1', 10_000)).toBe(true);
    expect(await first.hold('bot:1', 10_000)).toBe(false);

    await second.releaseAll();
    expect(await first.hold('bot:1', 10_000)).toBe(true);
    expect(await first.hold('bot:2', 10_000)).toBe(true);
    // Releasing a lease one does not hold changes nothing.
    await second.release('bot:1');
    expect(await second.hold('bot:1', 10_000)).toBe(false);
  });
});
