import type { Config } from './config.js';
import type { Db } from './db/database.js';
import { openMigrating } from './db/open-migrating.js';
import { systemClock, type Clock } from './domain/clock.js';
import type { Logger } from './domain/context.js';
import { createServices, type Services } from './services.js';

/** Opens the configured database, brings its schema up to date and builds the domain core. */
export async function openCore(config: Config, log: Logger, clock: Clock = systemClock): Promise<{ db: Db; services: Services }> {
  const { db, schema } = await openMigrating(config, log);
  await schema;
  return { db, services: createServices({ db, config, clock, log }) };
}
