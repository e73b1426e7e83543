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
    namedStatements: config.pgNamedStatements,
    onQuery: config.metricsToken ? observeQuery : undefined,
  });
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return { db, services: createServices({ db, config, clock, log }) };
}
