import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openDatabase, type Db } from '../src/db/database.js';

/**
 * The SQLite statement layer (db/database.ts): statements cached by SQL text, rows made into objects
 * by a builder compiled per statement. The rows must be exactly what better-sqlite3 would answer,
 * also after the schema changes under a cached statement. SQLite only: PostgreSQL has no such layer.
 */
describe('SQLite statement cache and row builder', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openDatabase({ dataDir: '', sqliteFile: ':memory:' });
    await sql`create table t (id integer primary key, name text, n integer, blob_col blob)`.execute(db.kysely);
    await sql`insert into t (id, name, n, blob_col) values (1, 'one', null, x'0102'), (2, 'two', 2, null)`.execute(db.kysely);
  });
  afterAll(() => db.close());

  it('answers rows as plain objects with every column, in column order', async () => {
    const { rows } = await sql`select * from t order by id`.execute(db.kysely);
    expect(rows).toEqual([
      { id: 1, name: 'one', n: null, blob_col: Buffer.from([1, 2]) },
      { id: 2, name: 'two', n: 2, blob_col: null },
    ]);
    expect(Object.keys(rows[0] as object)).toEqual(['id', 'name', 'n', 'blob_col']);
    expect(Object.getPrototypeOf(rows[0])).toBe(Object.prototype);
  });

  it('keeps the last of duplicate column names, and odd names as own properties', async () => {
    const { rows } = await sql`select 1 as a, 2 as a, 3 as "__proto__", 4 as "x""y", 5 as "1"`.execute(db.kysely);
    const row = rows[0] as Record<string, unknown>;
    expect(row.a).toBe(2);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe(3);
    expect(row['x"y']).toBe(4);
    expect(row['1']).toBe(5);
  });

  it('follows a schema change made after the statement was cached', async () => {
    const select = () => sql`select * from t where id = ${1}`.execute(db.kysely);
    expect((await select()).rows[0]).toEqual({ id: 1, name: 'one', n: null, blob_col: Buffer.from([1, 2]) });
    await sql`alter table t add column extra text default 'e'`.execute(db.kysely);
    expect((await select()).rows[0]).toEqual({ id: 1, name: 'one', n: null, blob_col: Buffer.from([1, 2]), extra: 'e' });
    await sql`alter table t rename column name to label`.execute(db.kysely);
    expect((await select()).rows[0]).toEqual({ id: 1, label: 'one', n: null, blob_col: Buffer.from([1, 2]), extra: 'e' });
  });

  it('reports changes and insert ids of writes, and rows of writes that return', async () => {
    const inserted = await db.kysely.executeQuery(sql`insert into t (id, label) values (3, 'three')`.compile(db.kysely));
    expect(inserted.numAffectedRows).toBe(1n);
    expect(inserted.insertId).toBe(3n);
    const { rows } = await sql`update t set n = 30 where id = 3 returning id, n`.execute(db.kysely);
    expect(rows).toEqual([{ id: 3, n: 30 }]);
  });
});
