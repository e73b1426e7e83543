import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/database.js';
import { MIGRATION_NAMES, migrateToLatest } from '../src/db/migrate.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

// Migrations at start-up (src/db/migrate.ts), and on PostgreSQL the introspector Kysely's migrator
// reads the schema through (src/db/introspector.ts; docs/operations.md, "Several installations in
// one database").
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const applied = async () =>
  (await sql<{ name: string }>`select name from kysely_migration`.execute(t.db.kysely)).rows.map((r) => r.name).sort();

describe('migrations', () => {
  it('run again on an up-to-date database, recording every migration once', async () => {
    expect(await applied()).toEqual(MIGRATION_NAMES);
    await migrateToLatest(t.db);
    expect(await applied()).toEqual(MIGRATION_NAMES);
  });

  it('check an up-to-date database with one query (a start-up on an existing database)', async () => {
    const dir = DIALECT === 'sqlite' ? fs.mkdtempSync(path.join(os.tmpdir(), 'parley-migrate-')) : '';
    const own = DIALECT === 'sqlite' ? await createTestDatabase({ dataDir: dir }) : undefined;
    let queries = 0;
    const db = await openDatabase({ databaseUrl: t.url, dataDir: dir, onQuery: () => queries++ });
    try {
      await migrateToLatest(db);
      expect(queries).toBe(1);
      // Records that differ from this build's list go to Kysely's migrator, which judges them (here:
      // a migration of a newer build, which it refuses).
      const newer = '9999-of-a-newer-build';
      await sql`insert into kysely_migration (name, timestamp) values (${newer}, ${new Date().toISOString()})`.execute(db.kysely);
      queries = 0;
      await expect(migrateToLatest(db)).rejects.toThrow(/9999-of-a-newer-build/);
      expect(queries).toBeGreaterThan(2);
      await sql`delete from kysely_migration where name = ${newer}`.execute(db.kysely);
    } finally {
      await db.close();
      await own?.drop();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  if (DIALECT === 'postgres') {
    describe('on PostgreSQL, beside other schemas of the database', () => {
      const other = `other_${Date.now().toString(36)}`;
      let own: string;
      beforeAll(async () => {
        own = (await sql<{ s: string }>`select current_schema() as s`.execute(t.db.kysely)).rows[0].s;
      });
      afterAll(async () => {
        await sql.raw(`drop schema if exists ${other} cascade`).execute(t.db.kysely);
        await sql.raw(`drop table if exists ${own}.probe`).execute(t.db.kysely);
      });

      it("read only the installation's own schema, with the columns Kysely describes", async () => {
        await sql.raw(`create schema ${other}`).execute(t.db.kysely);
        await sql.raw(`create table ${other}.messages (id serial primary key)`).execute(t.db.kysely);
        await sql
          .raw(`create table ${own}.probe (id serial primary key, n bigint generated always as identity, note text default 'x', free text)`)
          .execute(t.db.kysely);
        const tables = await t.db.kysely.introspection.getTables({ withInternalKyselyTables: true });
        expect(new Set(tables.map((table) => table.schema))).toEqual(new Set([own]));
        const names = tables.map((table) => table.name);
        expect(names).toEqual(expect.arrayContaining(['kysely_migration', 'kysely_migration_lock', 'messages', 'leads', 'probe']));
        expect((await t.db.kysely.introspection.getTables()).map((table) => table.name)).not.toContain('kysely_migration');

        const probe = tables.find((table) => table.name === 'probe');
        expect(probe).toMatchObject({ schema: own, isView: false });
        expect(probe?.columns).toEqual([
          {
            name: 'id',
            dataType: 'int4',
            dataTypeSchema: 'pg_catalog',
            isNullable: false,
            hasDefaultValue: true,
            isAutoIncrementing: true,
          },
          {
            name: 'n',
            dataType: 'int8',
            dataTypeSchema: 'pg_catalog',
            isNullable: false,
            hasDefaultValue: false,
            isAutoIncrementing: true,
          },
          {
            name: 'note',
            dataType: 'text',
            dataTypeSchema: 'pg_catalog',
            isNullable: true,
            hasDefaultValue: true,
            isAutoIncrementing: false,
          },
          {
            name: 'free',
            dataType: 'text',
            dataTypeSchema: 'pg_catalog',
            isNullable: true,
            hasDefaultValue: false,
            isAutoIncrementing: false,
          },
        ]);
      });

      it('run while other schemas of the database are created and dropped', async () => {
        // Another connection creates and drops schemas of many tables, as test files side by side
        // (or other installations) do, while this installation migrates again and again.
        const churner = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: '', poolSize: 1 });
        let churning = true;
        let rounds = 0;
        const churn = (async () => {
          while (churning) {
            const name = `${other}_${rounds++}`;
            const tables = Array.from({ length: 40 }, (_, i) => `create table ${name}.t${i} (id serial primary key, a text, b bigint);`);
            await sql.raw(`create schema ${name}; ${tables.join(' ')}`).execute(churner.kysely);
            await sql.raw(`drop schema ${name} cascade`).execute(churner.kysely);
          }
        })();
        let churned = false;
        void churn.finally(() => (churned = true)).catch(() => {});
        let migrations = 0;
        try {
          // Until another schema has come and gone a few times.
          while ((rounds < 5 || migrations < 5) && !churned) {
            await migrateToLatest(t.db);
            migrations++;
          }
        } finally {
          churning = false;
          await churn;
          await churner.close();
        }
        expect(await applied()).toEqual(MIGRATION_NAMES);
      });
    });
  }
});
