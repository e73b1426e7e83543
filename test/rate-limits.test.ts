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
    /** The harness's services on a database that counts its statements. */
    const countedDeps = () => {
      const { counter, statements, reset } = statementCounter();
      return {
        deps: { ...h.services.deps, db: { ...h.services.deps.db, kysely: h.services.deps.db.kysely.withPlugin(counter) } },
        statements,
        reset,
      };
    };

    // PostgreSQL: hits are batched (docs/performance.md); SQLite counts in memory.
    it('counts the hits of concurrent requests in one statement per batch, each told what it brought its key to', async () => {
      const { deps, statements, reset } = countedDeps();
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

    it('leases a hot key: fewer statements than hits, and two processes never admit more than the limit', async () => {
      const { deps, statements, reset } = countedDeps();
      // Two limiters built as two processes build theirs; a lease of a 1,000 limit is at most 50 hits.
      const a = RateLimiter.for(deps, 'lease-test', 1000, MINUTE);
      const b = RateLimiter.for(deps, 'lease-test', 1000, MINUTE);
      reset();
      for (let i = 0; i < 200; i++) expect(await a.hit('hot')).toBe(0);
      // Leases of 1, 2, 4, ... 32, then 50 hits: 9 statements for 200 hits.
      expect(statements()).toBeLessThanOrEqual(10);
      // Both together, in concurrent bursts, until well past the limit: never more than it admitted.
      const waits: number[] = [];
      for (let round = 0; round < 40; round++) {
        waits.push(...(await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).hit('hot')))));
      }
      const admitted = 200 + waits.filter((w) => w === 0).length;
      expect(admitted).toBeLessThanOrEqual(1000);
      // What one process leased and did not use is refused to the other: at most a lease less one.
      expect(admitted).toBeGreaterThanOrEqual(1000 - 2 * 49);
      // Refused hits answer the window's wait.
      expect(waits.filter((w) => w !== 0).every((w) => w === 60)).toBe(true);
      h.clock.advance(15_000);
      expect([await a.hit('hot'), await b.hit('hot')]).toEqual([45, 45]);
      expect([await a.retryAfter('hot'), await b.retryAfter('hot')]).toEqual([45, 45]);
    });

    it('a hot key over its two limits leased by a widget-like pair costs fewer statements than requests', async () => {
      const { deps, statements, reset } = countedDeps();
      const perVisitor = RateLimiter.for(deps, 'lease-visitor', 1000, MINUTE);
      const perAddress = RateLimiter.for(deps, 'lease-address', 3000, MINUTE);
      reset();
      for (let i = 0; i < 300; i++) expect(await perVisitor.hitThen(`v${i % 3}`, perAddress, 'ip:7')).toBe(0);
      expect(statements()).toBeLessThan(60);
      // Every hit is counted, leased or not, and no key beyond what was asked and leased.
      const counts = await stored('lease-%');
      const address = counts.find((r) => r.key === 'lease-address:ip:7')!;
      expect(address.count).toBeGreaterThanOrEqual(300);
      expect(address.count).toBeLessThanOrEqual(300 + 150);
    });

    it('a reset ends the lease of the process that reset the key', async () => {
      const a = RateLimiter.for(h.services.deps, 'lease-reset', 100, MINUTE);
      // Eight hits leave a lease of 4 hits unused (asked 1, 2, 4, then 5).
      for (let i = 0; i < 8; i++) expect(await a.hit('k')).toBe(0);
      expect(await stored('lease-reset:%')).toEqual([{ key: 'lease-reset:k', count: 12 }]);
      await a.reset('k');
      const waits: number[] = [];
      for (let i = 0; i < 120; i++) waits.push(await a.hit('k'));
      // The new window admits its limit, not the old lease on top.
      expect(waits.filter((w) => w === 0)).toHaveLength(100);
      expect(waits.at(-1)).toBe(60);
    });

    it('counts a key right when one request hits it first and another second in the same batch', async () => {
      const perVisitor = RateLimiter.for(h.services.deps, 'split-visitor', 5, MINUTE);
      // Under 40 a limit leases nothing, so the stored counts are the hits.
      const perAddress = RateLimiter.for(h.services.deps, 'split-address', 30, MINUTE);
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
