import { sql } from 'kysely';
import type { Config } from './config.js';
import { openDatabase, type Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { systemClock, type Clock } from './domain/clock.js';
import type { Logger } from './domain/context.js';
import { createServices, type Services } from './services.js';
import { observeQuery } from './metrics/metrics.js';

/** Opens the configured database, brings its schema up to date and builds the domain core. */
export async function openCore(config: Config, log: Logger, clock: Clock = systemClock): Promise<{ db: Db; services: Services }> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqlProfile: config.sqlProfile,
    poolSize: config.pgPoolSize,
    namedStatements: config.pgNamedStatements,
    rowChanges: config.pgRowCaches,
    onQuery: config.metricsToken ? observeQuery : undefined,
  });
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  if (db.dialect === 'postgres' && config.pgTableUpkeep === 'off') await warnWithoutAutovacuum(db, log);
  return { db, services: createServices({ db, config, clock, log }) };
}

/**
 * PostgreSQL keeps the plans of Parley's named statements (db/database.ts) and of its foreign-key
 * checks until statistics change, and only ANALYZE, which autovacuum runs, changes them: without it
 * a plan made while a table was small stays in use as the table grows (docs/operations.md,
 * "Statistics without autovacuum"). With the table upkeep on (the default), the background workers
 * analyze instead (db/table-upkeep.ts); with it off, the operator must.
 */
async function warnWithoutAutovacuum(db: Db, log: Logger): Promise<void> {
  const { rows } = await sql<{ autovacuum: string }>`show autovacuum`.execute(db.kysely);
  if (rows[0]?.autovacuum === 'off') {
    log.warn('PostgreSQL runs with autovacuum off: run ANALYZE regularly, or query plans go stale as tables grow (docs/operations.md)');
  }
}
