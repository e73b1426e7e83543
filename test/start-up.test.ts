import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { EarlySchema } from '../src/db/early-schema.js';
import { MIGRATION_NAMES } from '../src/db/migrate.js';
import { openMigrating } from '../src/db/open-migrating.js';
import { snapshot as postgresSnapshot } from '../src/db/snapshots/postgres.gen.js';
import { systemClock } from '../src/domain/clock.js';
import { installationId } from '../src/domain/installation/installation.repo.js';
import { createServices } from '../src/services.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

// The server's start (src/main.ts): the database's schema is brought up to date while the app is
// built, and the app is ready, so listens, only once the schema is there (docs/performance.md,
// "Start-up").
const silent = { info() {}, warn() {}, error() {}, debug() {} };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** The configuration of a process on `database` (PostgreSQL) or on a SQLite file in its own folder. */
function configFor(database: TestDatabase) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-start-'));
  cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  return loadConfig({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-0123456789',
    ...(database.url ? { DATABASE_URL: database.url } : {}),
  });
}

describe('a start on a new database', () => {
  it('builds the app while the schema is made, and is ready only once it is there', async () => {
    const empty = await createTestDatabase({ empty: true });
    cleanups.push(() => empty.drop());
    const config = configFor(empty);

    const { db, schema } = await openMigrating(config, silent);
    cleanups.push(() => db.close());
    let made = false;
    void schema.then(() => (made = true));
    // PostgreSQL runs the schema snapshot's script meanwhile (SQLite's is made in this process).
    if (DIALECT === 'postgres') expect(made).toBe(false);

    const app = await buildApp({ services: createServices({ db, config, clock: systemClock, log: silent }), schema });
    cleanups.push(() => app.close());
    await app.ready();
    expect(made).toBe(true);
    const id = await installationId(db.kysely);
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const res = await app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['parley-installation']).toBe(id);
  });

  it('fails when the schema cannot be brought up to date', async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    const newer = '9999-of-a-newer-build';
    await sql`insert into kysely_migration (name, timestamp) values (${newer}, ${new Date().toISOString()})`.execute(database.db.kysely);
    // SQLite: the same file, opened by the process under test.
    const config = configFor(database);
    if (DIALECT === 'sqlite') {
      const file = await createTestDatabase({ dataDir: config.dataDir });
      cleanups.push(() => file.drop());
      await sql`insert into kysely_migration (name, timestamp) values (${newer}, ${new Date().toISOString()})`.execute(file.db.kysely);
    }
    await expect(openMigrating(config, silent)).rejects.toThrow(/9999-of-a-newer-build/);
  });
});

// dist/main.js sends a new PostgreSQL schema's script before it loads the bundle
// (scripts/server-loader.mjs): a connection inside an open transaction that ran the script, handed
// over for the bundle to finish (src/db/early-schema.ts). Made here as the loader makes it.
const HANDOVER = Symbol.for('parley.schemaUnderWay');
const slot = globalThis as Record<symbol, unknown>;

function handOver(value: unknown): void {
  slot[HANDOVER] = value;
  cleanups.push(() => {
    slot[HANDOVER] = undefined;
  });
}

async function sendEarly(url: string, script: string): Promise<{ early: EarlySchema; pid: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  await client.query('begin');
  const ran = client.query(script).then(
    () => true,
    () => client.end().then(() => false),
  );
  const early = { url, script, client, ran };
  cleanups.push(() => client.end().catch(() => {}));
  handOver(early);
  return { early, pid: rows[0]!.pid };
}

async function recorded(database: { db: { kysely: Parameters<typeof installationId>[0] } }) {
  const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(database.db.kysely);
  return rows.map((r) => r.name);
}

describe('a new PostgreSQL schema whose script dist/main.js sent first', () => {
  const script = postgresSnapshot.statements.join(';\n');

  it('is finished in the transaction that ran the script, which then closes', async () => {
    const empty = await createTestDatabase({ empty: true });
    cleanups.push(() => empty.drop());
    const config = configFor(empty);
    if (DIALECT === 'sqlite') {
      // A SQLite start takes no PostgreSQL handover, even one made for its (absent) URL.
      const handover = { url: config.databaseUrl, script, ran: Promise.resolve(false) };
      handOver(handover);
      const { db, schema } = await openMigrating(config, silent);
      cleanups.push(() => db.close());
      await schema;
      expect(slot[HANDOVER]).toBe(handover);
      return;
    }
    const { pid } = await sendEarly(empty.url!, script);
    const { db, schema } = await openMigrating(config, silent);
    cleanups.push(() => db.close());
    await schema;
    expect(slot[HANDOVER]).toBeUndefined();
    expect(await recorded(empty)).toEqual([...MIGRATION_NAMES].sort());
    expect(await installationId(empty.db.kysely)).toMatch(/^[0-9a-f-]{36}$/);
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where pid = ${pid}`.execute(empty.db.kysely);
    expect(rows[0]!.n).toBe(0);
  });

  it("is rolled back and made by the bundle when the script is not the bundle's own", async () => {
    const empty = await createTestDatabase({ empty: true });
    cleanups.push(() => empty.drop());
    const config = configFor(empty);
    // SQLite: no handover is ever taken (above); the bundle makes the schema.
    if (DIALECT === 'postgres') await sendEarly(empty.url!, 'create table of_another_build (id int)');
    const { db, schema } = await openMigrating(config, silent);
    cleanups.push(() => db.close());
    await schema;
    expect(await recorded(DIALECT === 'postgres' ? empty : { db })).toEqual([...MIGRATION_NAMES].sort());
    const { rows } = await sql<{
      name: string | null;
    }>`select ${sql.raw(DIALECT === 'postgres' ? "to_regclass('of_another_build')::text" : "(select name from sqlite_master where name = 'of_another_build')")} as name`.execute(
      db.kysely,
    );
    expect(rows[0]!.name).toBeNull();
  });
});
