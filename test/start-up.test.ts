import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openMigrating } from '../src/db/open-migrating.js';
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
