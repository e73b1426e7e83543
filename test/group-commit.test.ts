import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/db/group-commit.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

let t: TestDatabase;
let accountId: number;
beforeAll(async () => {
  t = await createTestDatabase();
  const row = await t.db.kysely.insertInto('accounts').values({ name: 'a', plan: '{}', created_at: 0 }).returning('id').executeTakeFirstOrThrow();
  accountId = row.id;
});
afterAll(() => t.drop());

const addTag = (group: GroupCommit, tag: string, fail = false) =>
  group.run(async (trx) => {
    const row = await trx.insertInto('tags').values({ account_id: accountId, tag, tag_key: tag, created_at: 0 }).returning('id').executeTakeFirstOrThrow();
    if (fail) throw new Error(`unit ${tag} failed after writing`);
    return row.id;
  });

const tags = async () => (await t.db.kysely.selectFrom('tags').select('tag').orderBy('tag').execute()).map((r) => r.tag);

describe('GroupCommit', () => {
  it('gives every concurrent caller its own result and stores every unit', async () => {
    const group = new GroupCommit(t.db.kysely, 7);
    const names = Array.from({ length: 30 }, (_, i) => `ok-${String(i).padStart(2, '0')}`);
    const ids = await Promise.all(names.map((n) => addTag(group, n)));
    expect(new Set(ids).size).toBe(30);
    expect((await tags()).filter((n) => n.startsWith('ok-'))).toEqual(names);
  });

  it('rolls back a failing unit alone: its writes vanish, its caller gets the error, the others commit', async () => {
    const group = new GroupCommit(t.db.kysely);
    const results = await Promise.allSettled([addTag(group, 'mix-a'), addTag(group, 'mix-b', true), addTag(group, 'mix-c')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toContain('mix-b');
    expect((await tags()).filter((n) => n.startsWith('mix-'))).toEqual(['mix-a', 'mix-c']);
  });

  it('keeps a unit that violates a constraint from spoiling the batch', async () => {
    const group = new GroupCommit(t.db.kysely);
    const results = await Promise.allSettled([addTag(group, 'dup'), addTag(group, 'dup'), addTag(group, 'after-dup')]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await tags()).filter((n) => n === 'dup' || n === 'after-dup')).toEqual(['after-dup', 'dup']);
  });
});

describe('GroupCommit batching', () => {
  it('runs the units queued in one turn of the event loop in one transaction, up to the batch size', async () => {
    const whole = new GroupCommit(t.db.kysely);
    await Promise.all(Array.from({ length: 30 }, (_, i) => addTag(whole, `turn-${i}`)));
    expect(whole.batches).toBe(1);
    const split = new GroupCommit(t.db.kysely, 7);
    await Promise.all(Array.from({ length: 30 }, (_, i) => addTag(split, `split-${i}`)));
    expect(split.batches).toBe(5);
  });
});

describe('GroupCommit on a busy database', () => {
  it('runs a unit that met a concurrent transaction again in a later one, and the others of its batch commit once', async () => {
    const conflict = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const group = new GroupCommit(t.db.kysely, { retryable: (e) => (e as { code?: string }).code === '40P01' });
    let runs = 0;
    const flaky = group.run(async (trx) => {
      runs++;
      await trx.insertInto('tags').values({ account_id: accountId, tag: `retry-${runs}`, tag_key: `retry-${runs}`, created_at: 0 }).execute();
      if (runs === 1) throw conflict;
      return runs;
    });
    const results = await Promise.all([flaky, addTag(group, 'retry-other')]);
    expect(results[0]).toBe(2);
    expect(group.batches).toBe(2);
    // The first run's write was rolled back with its savepoint; the second run's was committed.
    expect((await tags()).filter((n) => n.startsWith('retry-'))).toEqual(['retry-2', 'retry-other']);
  });

  it('gives up after the allowed runs, and never retries other errors', async () => {
    const conflict = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const group = new GroupCommit(t.db.kysely, { retryable: (e) => (e as { code?: string }).code === '40P01', runs: 2 });
    let conflicting = 0;
    let failing = 0;
    const results = await Promise.allSettled([
      group.run(async () => {
        conflicting++;
        throw conflict;
      }),
      group.run(async () => {
        failing++;
        throw new Error('bad input');
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect([conflicting, failing]).toEqual([2, 1]);
  });

  it('with several lanes on PostgreSQL, starts another transaction while one is still open; SQLite keeps one lane', async () => {
    const group = new GroupCommit(t.db.kysely, { lanes: 2 });
    if (DIALECT === 'postgres') {
      let release!: () => void;
      const second = new Promise<void>((resolve) => (release = resolve));
      // The first unit waits for the second, which can only run in a transaction of its own.
      const first = group.run(async () => {
        await second;
        return 'first';
      });
      await new Promise((resolve) => setImmediate(resolve));
      const other = group.run(async () => {
        release();
        return 'second';
      });
      expect(await Promise.all([first, other])).toEqual(['first', 'second']);
    } else {
      // One connection: the unit queued while the first transaction is open runs after its commit.
      const order: string[] = [];
      const first = group.run(async () => {
        await new Promise((resolve) => setImmediate(resolve));
        order.push('first');
      });
      await new Promise((resolve) => setImmediate(resolve));
      const other = group.run(async () => void order.push('second'));
      await Promise.all([first, other]);
      expect(order).toEqual(['first', 'second']);
    }
    expect(group.batches).toBe(2);
  });
});
