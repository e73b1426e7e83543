import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimiter } from '../src/domain/auth/rate-limiter.js';
import { createHarness, type Harness } from './helpers/harness.js';
import { DIALECT } from './helpers/database.js';
import { statementCounter } from './helpers/statements.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h.close());

const MINUTE = 60_000;

/** The stored counters whose keys match `pattern` (SQL LIKE), by key. */
const stored = (pattern: string) =>
  h.database.db.kysely.selectFrom('rate_limits').select(['key', 'count']).where('key', 'like', pattern).orderBy('key').execute();

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

  if (DIALECT === 'postgres') {
    // PostgreSQL: hits are batched (docs/performance.md); SQLite counts in memory.
    it('counts the hits of concurrent requests in one statement per batch, each told what it brought its key to', async () => {
      const { counter, statements, reset } = statementCounter();
      const deps = { ...h.services.deps, db: { ...h.services.deps.db, kysely: h.services.deps.db.kysely.withPlugin(counter) } };
      const perVisitor = RateLimiter.for(deps, 'batch-visitor', 2, MINUTE);
      const perAddress = RateLimiter.for(deps, 'batch-address', 15, MINUTE);
      reset();
      // Ten visitors behind one address, three messages each, all at once.
      const waits = await Promise.all(Array.from({ length: 30 }, (_, i) => perVisitor.hitThen(`v${i % 10}`, perAddress, 'ip:5')));
      // Two lanes: at most two statements for the thirty requests.
      expect(statements()).toBeLessThanOrEqual(2);
      // Each visitor's third message is over its limit (10 refused, the address not charged); of the
      // twenty left, the address's limit lets fifteen through.
      expect(waits.filter((w) => w === 0)).toHaveLength(15);
      expect(waits.filter((w) => w === 60)).toHaveLength(15);
      expect(await stored('batch-%')).toEqual([
        { key: 'batch-address:ip:5', count: 20 },
        ...Array.from({ length: 10 }, (_, i) => ({ key: `batch-visitor:v${i}`, count: 3 })),
      ]);
    });

    it('counts a key right when one request hits it first and another second in the same batch', async () => {
      const perVisitor = RateLimiter.for(h.services.deps, 'split-visitor', 5, MINUTE);
      const perAddress = RateLimiter.for(h.services.deps, 'split-address', 100, MINUTE);
      await Promise.all([
        perAddress.hit('ip:6'),
        perVisitor.hitThen('v', perAddress, 'ip:6'),
        perAddress.hit('ip:6'),
        perVisitor.hitThen('v', perAddress, 'ip:6'),
      ]);
      expect(await stored('split-%')).toEqual([
        { key: 'split-address:ip:6', count: 4 },
        { key: 'split-visitor:v', count: 2 },
      ]);
    });
  }
});
