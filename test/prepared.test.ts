import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepared } from '../src/db/prepared.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
  await t.db.kysely
    .insertInto('accounts')
    .values([
      { name: 'first', plan: '{}', created_at: 1 },
      { name: 'second', plan: '{}', created_at: 2 },
    ])
    .execute();
});
afterAll(() => t.drop());

describe('prepared queries', () => {
  it('runs a query built once with each call’s arguments, keeping the fixed values of the build', async () => {
    let builds = 0;
    const byName = prepared((db, p: { name: string }) => {
      builds++;
      return db.selectFrom('accounts').select(['name', 'created_at']).where('name', '=', p.name).where('plan', '=', '{}').limit(1);
    });
    expect(await byName(t.db.kysely, { name: 'first' })).toEqual([{ name: 'first', created_at: 1 }]);
    expect(await byName(t.db.kysely, { name: 'second' })).toEqual([{ name: 'second', created_at: 2 }]);
    expect(await byName(t.db.kysely, { name: 'nobody' })).toEqual([]);
    expect(builds).toBe(1);
  });

  it('puts each named parameter where the build said, whatever the order, and runs inside a transaction', async () => {
    const insert = prepared((db, p: { name: string; at: number }) =>
      db.insertInto('accounts').values({ created_at: p.at, name: p.name, plan: '{"x":1}' }).returning(['name', 'plan', 'created_at']),
    );
    const inside = await t.db.kysely.transaction().execute(async (trx) => {
      const [row] = await insert(trx, { at: 3, name: 'third' });
      const seen = await trx.selectFrom('accounts').select('name').where('created_at', '=', 3).execute();
      return { row, seen };
    });
    expect(inside.row).toEqual({ name: 'third', plan: '{"x":1}', created_at: 3 });
    expect(inside.seen).toEqual([{ name: 'third' }]);
  });

  it('builds per dialect: the builder learns which one it writes for', async () => {
    const dialects: string[] = [];
    const count = prepared((db, p: { upTo: number }, dialect) => {
      dialects.push(dialect);
      return db
        .selectFrom('accounts')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('created_at', '<=', p.upTo);
    });
    const [row] = await count(t.db.kysely, { upTo: 2 });
    expect(Number(row!.n)).toBe(2);
    expect(dialects).toEqual([DIALECT]);
  });
});
