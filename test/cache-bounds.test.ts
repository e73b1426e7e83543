import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../src/db/database.js';
import { KeptRows } from '../src/db/kept-rows.js';
import { TokenSigner } from '../src/domain/auth/token-signer.js';
import { ManualClock } from '../src/domain/clock.js';
import { LeadReadCache } from '../src/domain/leads/read-cache.js';
import { cacheSnapshot } from '../src/metrics/cache-stats.js';

// Each in-memory cache stays within its bound however much a write-heavy run feeds it, and its
// look-ups are counted for the metrics (parley_cache_lookups_total, _entries, _bytes).
const looked = (name: string) => {
  const c = cacheSnapshot().find((s) => s.name === name);
  return (c?.hits ?? 0) + (c?.misses ?? 0);
};

describe('cache bounds', () => {
  it('the lead read cache keeps under its entries and bytes while versions move with every few reads', async () => {
    const cache = new LeadReadCache('sqlite', 40, 48 * 1024);
    const before = looked('lead_reads');
    const page = (n: number) => ({ leads: Array.from({ length: n }, (_, i) => ({ id: i, name: `lead ${i} ${'x'.repeat(40)}` })) });
    let version = 0;
    let hits = 0;
    for (let round = 0; round < 400; round++) {
      if (round % 9 === 0) version++; // a write moves the account's version
      const view = cache.viewAt(round % 3, version, {} as never);
      for (const key of ['active', 'inbox', `filter-${round % 2}`]) {
        let computed = false;
        await view.get(key, async () => {
          computed = true;
          return page(5 + (round % 30));
        });
        if (!computed) hits++;
        const held = cache.held();
        expect(held.entries).toBeLessThanOrEqual(40);
        expect(held.bytes).toBeLessThanOrEqual(48 * 1024);
      }
    }
    expect(hits).toBeGreaterThan(0);
    expect(cache.held().bytes).toBeGreaterThan(0);
    expect(looked('lead_reads') - before).toBe(1200);
    // An answer larger than a quarter of the bound is answered and not kept.
    const big = await cache.viewAt(99, version, {} as never).get('huge', async () => page(2000));
    expect(big.leads).toHaveLength(2000);
    expect(cache.held().bytes).toBeLessThanOrEqual(48 * 1024);
  });

  it('kept rows stay under their rows and bytes while rows change and new ones are read', async () => {
    const listeners: Array<(id: number | undefined) => void> = [];
    const feed = { subscribe: (_t: string, l: (id: number | undefined) => void) => listeners.push(l), listening: () => true };
    const kept = new KeptRows<number, { id: number; body: string }>({ changes: feed } as unknown as Db, 'users', 100, 16 * 1024);
    let reads = 0;
    for (let i = 0; i < 3000; i++) {
      const id = i % 40;
      const row = await kept.find(id, async () => {
        reads++;
        return { id, body: 'b'.repeat(i % 97 === 0 ? 3000 : 50 + (i % 100)) };
      });
      expect(row?.id).toBe(id);
      if (i % 5 === 0) for (const l of listeners) l(id); // a write to the row
      const held = kept.held();
      expect(held.entries).toBeLessThanOrEqual(100);
      expect(held.bytes).toBeLessThanOrEqual(16 * 1024);
    }
    expect(reads).toBeLessThan(3000);
    expect(kept.held().entries).toBeGreaterThan(0);
  });

  it('verified tokens stay at most 1,000', async () => {
    const signer = new TokenSigner(new TextEncoder().encode('a secret of enough length for HS256 tokens'), new ManualClock(Date.now()));
    const tokens = await Promise.all(Array.from({ length: 1300 }, (_, i) => signer.sign(i + 1, 1, 'access', 3600)));
    for (const t of tokens) await signer.verify(t.token);
    await signer.verify(tokens.at(-1)!.token);
    const entries = (signer as unknown as { verified: Map<string, unknown> }).verified.size;
    expect(entries).toBe(1000);
  });

  it("SQLite's statement cache stays at most 500 statements under 2,000 distinct writes", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-cache-'));
    const db = await openDatabase({ dataDir: dir });
    try {
      await sql`create table t (id integer primary key, v text)`.execute(db.kysely);
      const before = cacheSnapshot().find((s) => s.name === 'sqlite_statements')?.entries ?? 0;
      for (let i = 0; i < 2000; i++) await sql.raw(`insert into t (v) values ('${i}')`).execute(db.kysely);
      const after = cacheSnapshot().find((s) => s.name === 'sqlite_statements')!;
      // Other files' databases in this worker may hold statements too: this one adds at most 500.
      expect(after.entries - before).toBeLessThanOrEqual(500);
      expect(after.entries - before).toBeGreaterThan(400);
    } finally {
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
