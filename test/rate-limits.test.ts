import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter } from '../src/domain/auth/rate-limiter.js';
import { createHarness, type Harness } from './helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const MINUTE = 60_000;

describe('rate limits', () => {
  it('counts hits in a fixed window and answers the seconds left once over the limit', async () => {
    const limiter = RateLimiter.for(h.services.deps, 'window-test', 3, MINUTE);
    expect([await limiter.hit('k'), await limiter.hit('k'), await limiter.hit('k')]).toEqual([0, 0, 0]);
    expect(await limiter.retryAfter('k')).toBe(60);
    h.clock.advance(15_000);
    expect(await limiter.hit('k')).toBe(45);
    expect(await limiter.hit('other')).toBe(0);
    h.clock.advance(45_000);
    expect(await limiter.retryAfter('k')).toBe(0);
    expect(await limiter.hit('k')).toBe(0);
    await limiter.reset('k');
    expect(await limiter.retryAfter('k')).toBe(0);
  });

  it('on PostgreSQL every process counts in one shared window (concurrent hits included)', async () => {
    // Two limiters built as two processes build theirs: same name, same database.
    const a = RateLimiter.for(h.services.deps, 'shared-test', 10, MINUTE);
    const b = RateLimiter.for(h.services.deps, 'shared-test', 10, MINUTE);
    const waits = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).hit('ip:1')));
    const allowed = waits.filter((w) => w === 0).length;
    // In memory (SQLite: one process) each limiter counts alone.
    expect(allowed).toBe(h.database.db.dialect === 'postgres' ? 10 : 20);
    if (h.database.db.dialect === 'postgres') {
      expect(await b.retryAfter('ip:1')).toBeGreaterThan(0);
      await a.reset('ip:1');
      expect(await b.retryAfter('ip:1')).toBe(0);
    }
  });

  it('counts a second limit only when the first allowed the hit (one statement on PostgreSQL)', async () => {
    const perVisitor = RateLimiter.for(h.services.deps, 'then-visitor', 2, MINUTE);
    const perAddress = RateLimiter.for(h.services.deps, 'then-address', 3, 2 * MINUTE);
    const hit = (visitor: string) => perVisitor.hitThen(visitor, perAddress, 'ip:9');
    expect([await hit('v1'), await hit('v1')]).toEqual([0, 0]);
    // Over the visitor's limit: refused with its wait, and the address is not charged for it.
    expect(await hit('v1')).toBe(60);
    expect(await hit('v1')).toBe(60);
    expect(await perAddress.retryAfter('ip:9')).toBe(0);
    // Another visitor at that address: its third address hit fills the address's window.
    expect(await hit('v2')).toBe(0);
    expect(await perAddress.retryAfter('ip:9')).toBe(120);
    h.clock.advance(30_000);
    expect(await hit('v3')).toBe(90);
  });
});
