import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';
import { keyedTransaction, releaseLockSql, schemaLockKey, type Executor } from '../src/db/database.js';

// keyedTransaction's lock (src/db/database.ts): the ingest batches of every process on one
// PostgreSQL database take their lane's lock with their begin (docs/performance.md).
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

    // A commit held back at its start: a deferred trigger on `commit_gates` waits for GATE's lock.
    const GATE = [7311998, 1] as const;
    const gate = async () => {
      await sql`create table if not exists commit_gates (fail boolean not null)`.execute(t.db.kysely);
      await sql`create or replace function commit_gate() returns trigger language plpgsql as $$
        begin
          if new.fail then raise exception 'the gate refuses the commit'; end if;
          perform pg_advisory_xact_lock(${sql.lit(GATE[0])}, ${sql.lit(GATE[1])});
          return null;
        end $$`.execute(t.db.kysely);
      await sql`drop trigger if exists commit_gate on commit_gates`.execute(t.db.kysely);
      await sql`create constraint trigger commit_gate after insert on commit_gates deferrable initially deferred
        for each row execute function commit_gate()`.execute(t.db.kysely);
    };
    /** Advisory locks on `key` in pg_locks, granted or waited for. */
    const advisory = async (key: readonly [number, number], granted: boolean, first = sql.lit(key[0])) =>
      (
        await sql<{ n: number }>`select count(*)::int as n from pg_locks
          where locktype = 'advisory' and classid = (${first})::oid and objid = ${key[1]} and granted = ${granted}`.execute(t.db.kysely)
      ).rows[0].n;
    const laneLocks = (granted: boolean) => advisory(LOCK.key, granted, sql.raw(schemaLockKey(LOCK.key[0])));

    it('lets go of the lock as its commit begins: the next transaction naming it runs while the commit is written', async () => {
      await gate();
      const db = t.db.kysely;
      // Another session holds the gate: the first transaction's commit waits at its start.
      let openGate = (): void => {};
      let gateHeld = (): void => {};
      const holdingGate = new Promise<void>((resolve) => (gateHeld = resolve));
      const holder = db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${GATE[0]}, ${GATE[1]})`.execute(trx);
        gateHeld();
        await new Promise<void>((resolve) => (openGate = resolve));
      });
      await holdingGate;
      const first = keyedTransaction(db, (trx) => sql`insert into commit_gates (fail) values (false)`.execute(trx), { lock: LOCK });
      for (let turns = 0; (await advisory(GATE, false)) === 0; turns++) {
        if (turns > 10_000) throw new Error('the first commit never reached the gate');
        await new Promise((resolve) => setImmediate(resolve));
      }
      // With the lock held until the commit ended, this one waited for the gate, then failed.
      await expect(keyedTransaction(db, async () => 'second', { lock: { ...LOCK, waitMs: 2_000 } })).resolves.toBe('second');
      const committed = async () => (await sql<{ n: number }>`select count(*)::int as n from commit_gates`.execute(db)).rows[0].n;
      expect(await committed()).toBe(0);
      openGate();
      await holder;
      await first;
      expect(await committed()).toBe(1);
      expect(await laneLocks(true)).toBe(0);
    });

    it('lets go of the lock with the statement that carries its release, before the transaction ends', async () => {
      await gate();
      const db = t.db.kysely;
      let finish = (): void => {};
      let released = (): void => {};
      const letGo = new Promise<void>((resolve) => (released = resolve));
      const first = keyedTransaction(
        db,
        async (trx) => {
          const row = (await sql<{ released: boolean }>`select (select ${sql.raw(releaseLockSql(LOCK))}) as released`.execute(trx)).rows[0];
          await sql`insert into commit_gates (fail) values (false)`.execute(trx);
          released();
          await new Promise<void>((resolve) => (finish = resolve));
          return row.released;
        },
        { lock: LOCK },
      );
      await letGo;
      // The first transaction is still open: the lock is had at once, its write not yet seen.
      await expect(keyedTransaction(db, async () => 'second', { lock: { ...LOCK, waitMs: 100 } })).resolves.toBe('second');
      const committed = async () => (await sql<{ n: number }>`select count(*)::int as n from commit_gates`.execute(db)).rows[0].n;
      const before = await committed();
      finish();
      // Its commit lets go of nothing more, and commits.
      await expect(first).resolves.toBe(true);
      expect(await committed()).toBe(before + 1);
      expect(await laneLocks(true)).toBe(0);
    });

    it('lets go of the lock when its work fails and when its commit fails: no pooled connection keeps it', async () => {
      await gate();
      const db = t.db.kysely;
      await expect(
        keyedTransaction(
          db,
          async () => {
            throw new Error('the work fails');
          },
          { lock: LOCK },
        ),
      ).rejects.toThrow('the work fails');
      expect(await laneLocks(true)).toBe(0);
      await expect(
        keyedTransaction(db, (trx) => sql`insert into commit_gates (fail) values (true)`.execute(trx), { lock: LOCK }),
      ).rejects.toThrow('the gate refuses the commit');
      expect(await laneLocks(true)).toBe(0);
      // And the lock is had again at once.
      await expect(keyedTransaction(db, async () => 'again', { lock: { ...LOCK, waitMs: 100 } })).resolves.toBe('again');
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
