import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openCore } from '../src/boot.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { DIALECT } from './helpers/database.js';
import { createHarness, type Harness } from './helpers/harness.js';

// PARLEY_PG_POOL_SIZE: the connections one process keeps at most (docs/operations.md, "Connections").
const silent = { info() {}, warn() {}, error() {}, debug() {} };

describe('PARLEY_PG_POOL_SIZE', () => {
  it('is 10 unless set, and must be a whole number of at least 1', () => {
    expect(loadConfig({}).pgPoolSize).toBe(10);
    expect(loadConfig({ PARLEY_PG_POOL_SIZE: '4' }).pgPoolSize).toBe(4);
    for (const bad of ['0', '-1', '2.5', 'ten']) {
      expect(() => loadConfig({ PARLEY_PG_POOL_SIZE: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ PARLEY_PG_POOL_SIZE: bad }), bad).toThrow(/PARLEY_PG_POOL_SIZE must be an integer >= 1/);
    }
  });

  if (DIALECT === 'postgres') {
    describe('on PostgreSQL', () => {
      let h: Harness;
      beforeAll(async () => {
        h = await createHarness();
      });
      afterAll(() => h.close());

      /** The connections a process configured with `size` opens for eight statements at once. */
      const connectionsFor = async (size: string) => {
        const config = loadConfig({
          DATABASE_URL: h.database.url,
          PARLEY_DATA_DIR: h.dataDir,
          PARLEY_JWT_SECRET: h.config.jwtSecret,
          PARLEY_PG_POOL_SIZE: size,
        });
        const { db } = await openCore(config, silent);
        try {
          const answers = await Promise.all(
            Array.from({ length: 8 }, (_, i) => sql<{ n: number }>`select ${i}::int as n`.execute(db.kysely)),
          );
          expect(answers.map((a) => a.rows[0]?.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
          return db.poolStats?.().total;
        } finally {
          await db.close();
        }
      };

      it('bounds the connections a process opens, every statement still answered', async () => {
        expect(await connectionsFor('2')).toBe(2);
        // The same eight statements with room for them open more: the bound above is the setting's.
        expect(await connectionsFor('8')).toBeGreaterThan(2);
      });
    });
  }
});
