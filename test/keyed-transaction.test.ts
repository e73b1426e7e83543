import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';
import { keyedTransaction, schemaLockKey, type Executor } from '../src/db/database.js';

// keyedTransaction's lock (src/db/database.ts): the ingest batches of every process on one
// PostgreSQL database take their lane's lock with their begin (docs/performance.md, issue 19
// eighteenth pass).
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const LOCK = { key: [7311999, 3] as const, waitMs: 60_000 };
const lockTimeout = async (trx: Executor) => (await sql<{ lock_timeout: string }>`show lock_timeout`.execute(trx)).rows[0].lock_timeout;

describe('keyedTransaction with a lock', () => {
  if (DIALECT === 'postgres') {
    it('runs the transactions naming one lock one at a time, and fails one that waited longer than its wait', async () => {
      const db = t.db.kysely;
      let release = (): void => {};
      let holding = (): void => {};
      const held = new Promise<void>((resolve) => (holding = resolve));
      const first = keyedTransaction(
        db,
        async () => {
          holding();
          await new Promise<void>((resolve) => (release = resolve));
          return 'first';
        },
        { lock: LOCK },
      );
      await held;
      // A short wait gives up (lock_not_available) and runs nothing.
      let ranImpatient = false;
      const impatient = keyedTransaction(
        db,
        async () => {
          ranImpatient = true;
        },
        { lock: { ...LOCK, waitMs: 50 } },
      );
      await expect(impatient).rejects.toMatchObject({ code: '55P03' });
      expect(ranImpatient).toBe(false);
      // A patient one runs once the first has ended, and its own statements wait as configured.
      const order: string[] = [];
      const patient = keyedTransaction(
        db,
        async (trx) => {
          order.push('second');
          return lockTimeout(trx);
        },
        { lock: LOCK },
      );
      const waiting = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_locks
            where locktype = 'advisory' and classid = (${sql.raw(schemaLockKey(LOCK.key[0]))})::oid and objid = ${LOCK.key[1]}
              and not granted`.execute(db)
        ).rows[0].n;
      for (let turns = 0; (await waiting()) === 0; turns++) {
        if (turns > 10_000) throw new Error('the second transaction never waited for the lock');
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(order).toEqual([]);
      order.push('first ends');
      release();
      await expect(first).resolves.toBe('first');
      await expect(patient).resolves.toBe(await db.connection().execute(lockTimeout));
      expect(order).toEqual(['first ends', 'second']);
    });

    it('refuses a lock whose keys are not 32-bit integers', async () => {
      await expect(keyedTransaction(t.db.kysely, async () => 1, { lock: { key: [2 ** 31, 0], waitMs: 10 } })).rejects.toThrow(
        'a transaction lock is two 32-bit integers',
      );
    });
  } else {
    it('runs a plain transaction on SQLite (one process), the lock aside', async () => {
      const db = t.db.kysely;
      await expect(keyedTransaction(db, async () => 'done', { lock: LOCK })).resolves.toBe('done');
    });
  }
});
