import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import type { Db } from '../src/db/database.js';
import { MIGRATION_NAMES, migrateToLatest } from '../src/db/migrate.js';
import { applySnapshot, MADE_AT_APPLY } from '../src/db/schema-snapshot.js';
import { snapshot as postgresSnapshot } from '../src/db/snapshots/postgres.gen.js';
import { snapshot as sqliteSnapshot } from '../src/db/snapshots/sqlite.gen.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';
import { recordSnapshot, snapshotModule } from './helpers/schema-snapshot.js';

// A new database gets the schema snapshot of src/db/snapshots/ in one transaction instead of each
// migration (src/db/schema-snapshot.ts). The snapshot must be what the migrations make.

describe('schema snapshot', () => {
  it(`is the recording of today's migrations (${DIALECT}; regenerate with -u)`, async () => {
    const recorded = await recordSnapshot(DIALECT, process.env.DATABASE_URL);
    await expect(snapshotModule(recorded)).toMatchFileSnapshot(`../src/db/snapshots/${DIALECT}.gen.ts`);
  });

  it("of each dialect lists this build's migrations (a migration added without regenerating fails here)", () => {
    expect(sqliteSnapshot.migrations).toEqual(MIGRATION_NAMES);
    expect(postgresSnapshot.migrations).toEqual(MIGRATION_NAMES);
  });

  describe('applied to a new database', () => {
    let migrated: TestDatabase;
    let fresh: TestDatabase;
    let queries = 0;
    beforeAll(async () => {
      migrated = await createTestDatabase({ migrateTo: MIGRATION_NAMES.at(-1) });
      fresh = await createTestDatabase({ empty: true, onQuery: () => queries++ });
    });
    afterAll(async () => {
      await migrated.drop();
      await fresh.drop();
    });

    it('makes in a few statements the schema, functions, triggers and rows the migrations make', async () => {
      await migrateToLatest(fresh.db);
      // The up-to-date check, the check for a new database, the script, its records (the migrator
      // runs hundreds of statements).
      expect(queries).toBeLessThan(10);
      expect(await describeSchema(fresh.db)).toEqual(await describeSchema(migrated.db));
      const names = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(fresh.db.kysely);
      expect(names.rows.map((r) => r.name)).toEqual(MIGRATION_NAMES);
    });

    it('makes the rows of each installation anew (the installation id)', async () => {
      const id = async (t: TestDatabase) => (await sql<{ id: string }>`select id from installation`.execute(t.db.kysely)).rows;
      const [a, b] = [await id(fresh), await id(migrated)];
      expect(a).toHaveLength(1);
      expect(a[0].id).toMatch(/^[0-9a-f-]{36}$/);
      expect(a[0].id).not.toBe(b[0].id);
    });

    it('is not applied to a database that is not new, which it leaves alone', async () => {
      const before = await describeSchema(migrated.db);
      expect(await applySnapshot(migrated.db, MIGRATION_NAMES)).toBe(false);
      expect(await describeSchema(migrated.db)).toEqual(before);
    });

    it('is not applied when it is not of the migrations asked for (the migrator runs them)', async () => {
      const other = await createTestDatabase({ empty: true });
      try {
        expect(await applySnapshot(other.db, [...MIGRATION_NAMES, '9999-newer'])).toBe(false);
        expect(await applySnapshot(other.db, MIGRATION_NAMES.slice(0, -1))).toBe(false);
        const tables = await other.db.kysely.introspection.getTables({ withInternalKyselyTables: true });
        expect(tables).toEqual([]);
      } finally {
        await other.drop();
      }
    });
  });
});

/** Every object of the database's schema with its definition, and every table's rows. */
async function describeSchema(db: Db): Promise<unknown> {
  const rows = async <T>(query: ReturnType<typeof sql<T>>) => (await query.execute(db.kysely)).rows;
  if (db.dialect === 'sqlite') {
    const objects = await rows<{ type: string; name: string; tbl_name: string; sql: string | null }>(
      sql`select type, name, tbl_name, sql from sqlite_master order by type, name`,
    );
    return {
      objects,
      data: await tableRows(
        db,
        objects.filter((o) => o.type === 'table').map((o) => o.name),
      ),
      pragmas: await rows(sql`pragma user_version`),
    };
  }
  const [{ s }] = await rows<{ s: string }>(sql`select current_schema() as s`);
  const own = (text: string) => text.replaceAll(`${s}.`, '<schema>.');
  const ns = sql`to_regnamespace(current_schema())::oid`;
  const relations = await rows<{ relname: string; relkind: string; relpersistence: string }>(
    sql`select relname, relkind, relpersistence from pg_class where relnamespace = ${ns} order by relname`,
  );
  const columns = await rows(
    sql`select table_name, column_name, ordinal_position, data_type, udt_name, column_default, is_nullable, is_identity, identity_generation,
          character_maximum_length, numeric_precision, is_generated, generation_expression
        from information_schema.columns where table_schema = current_schema() order by table_name, column_name`,
  );
  const indexes = await rows<{ def: string }>(
    sql`select pg_get_indexdef(i.indexrelid) as def from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = ${ns} order by 1`,
  );
  const constraints = await rows<{ conname: string; def: string }>(
    sql`select conrelid::regclass::text as rel, conname, pg_get_constraintdef(oid) as def from pg_constraint where connamespace = ${ns} order by 1, 2`,
  );
  const functions = await rows<{ def: string }>(
    sql`select p.proname, pg_get_functiondef(p.oid) as def from pg_proc p where p.pronamespace = ${ns} order by 1, 2`,
  );
  const triggers = await rows<{ def: string }>(
    sql`select t.tgname, pg_get_triggerdef(t.oid) as def, t.tgenabled from pg_trigger t join pg_class c on c.oid = t.tgrelid
        where c.relnamespace = ${ns} and not t.tgisinternal order by 1, 2`,
  );
  const views = await rows(sql`select viewname, definition from pg_views where schemaname = current_schema() order by 1`);
  const sequences = await rows(
    sql`select sequencename, data_type::text, start_value, increment_by, last_value from pg_sequences where schemaname = current_schema() order by 1`,
  );
  const tables = relations.filter((r) => r.relkind === 'r').map((r) => r.relname);
  return {
    relations,
    columns,
    indexes: indexes.map((i) => own(i.def)),
    constraints: constraints.map((c) => ({ ...c, def: own(c.def) })),
    functions: functions.map((f) => ({ ...f, def: own(f.def) })),
    triggers: triggers.map((t) => ({ ...t, def: own(t.def) })),
    views,
    sequences,
    data: await tableRows(db, tables),
  };
}

/** Each table's rows; the migrator's records by name only, rows made per installation by count. */
async function tableRows(db: Db, tables: string[]): Promise<Record<string, unknown>> {
  const data: Record<string, unknown> = {};
  for (const table of tables) {
    const all = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(db.kysely)).rows;
    if (table === 'kysely_migration') data[table] = all.map((r) => r.name).sort();
    else if (table in MADE_AT_APPLY) data[table] = all.length;
    else data[table] = all.map((r) => JSON.stringify(r)).sort();
  }
  return data;
}
