import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import { openDatabase } from '../src/db/database.js';
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

  it('keeps answering when a table it reads changes shape while the process runs (an upgrade migrating)', async () => {
    await sql`create table shape_probe (a integer)`.execute(t.db.kysely);
    await sql`insert into shape_probe (a) values (1)`.execute(t.db.kysely);
    const all = prepared((db, p: { a: number }) =>
      (db as unknown as Kysely<any>).selectFrom('shape_probe').selectAll().where('a', '=', p.a),
    );
    await t.db.kysely.connection().execute(async (conn) => {
      expect(await all(conn, { a: 1 })).toEqual([{ a: 1 }]);
      if (DIALECT === 'postgres') {
        // PostgreSQL: the query is a named statement of this connection, parsed once.
        const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(conn);
        expect(rows.some((r) => r.statement.includes('"shape_probe"'))).toBe(true);
      }
      await sql`alter table shape_probe add column b integer`.execute(conn);
      // PostgreSQL refuses the kept statement of the old shape: it is prepared anew under a new name.
      expect(await all(conn, { a: 1 })).toEqual([{ a: 1, b: null }]);
      expect(await all(conn, { a: 1 })).toEqual([{ a: 1, b: null }]);
    });
  });

  it('runs unnamed when named statements are off (a pooler in transaction mode)', async () => {
    const db = t.url ? await openDatabase({ databaseUrl: t.url, dataDir: '', poolSize: 1, namedStatements: false }) : t.db;
    const byName = prepared((k, p: { name: string }) =>
      k.selectFrom('accounts').select('name').where('name', '=', p.name).where('created_at', '=', 1),
    );
    try {
      await db.kysely.connection().execute(async (conn) => {
        expect(await byName(conn, { name: 'first' })).toEqual([{ name: 'first' }]);
        if (DIALECT === 'postgres') {
          const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements`.execute(conn);
          expect(rows[0].n).toBe(0);
        }
      });
    } finally {
      if (db !== t.db) await db.close();
    }
  });
});
