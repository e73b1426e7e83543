import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupCommit } from '../src/db/group-commit.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';

let t: TestDatabase;
let accountId: number;
beforeAll(async () => {
  t = await createTestDatabase();
  const row = await t.db.kysely
    .insertInto('accounts')
    .values({ name: 'a', plan: '{}', created_at: 0 })
    .returning('id')
    .executeTakeFirstOrThrow();
  accountId = row.id;
});
afterAll(() => t.drop());

const addTag = (group: GroupCommit, tag: string, fail = false) =>
  group.run(async (trx) => {
    const row = await trx
      .insertInto('tags')
      .values({ account_id: accountId, tag, tag_key: tag, created_at: 0 })
      .returning('id')
      .executeTakeFirstOrThrow();
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
