import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { Logger } from '../domain/context.js';
import { openDatabase, type Db } from './database.js';
import { takeEarlySchema } from './early-schema.js';
import { migrateToLatest } from './migrate.js';

/**
 * Opens the configured database and starts bringing its schema up to date: `schema` resolves once
 * it is, or rejects, the database closed, when it cannot be. Resolves as soon as what is left is
 * PostgreSQL's own work (a new database's schema snapshot, db/schema-snapshot.ts, perhaps sent
 * before this bundle loaded: db/early-schema.ts), or once it is done: the server loads and builds
 * its app meanwhile and listens only after `schema` resolved (docs/performance.md, "Start-up").
 */
export async function openMigrating(config: Config, log: Logger): Promise<{ db: Db; schema: Promise<void> }> {
  const db = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqlProfile: config.sqlProfile,
    poolSize: config.pgPoolSize,
    namedStatements: config.pgNamedStatements,
    rowChanges: config.pgRowCaches,
    // prom-client loads with the app, not before the database (unless the metrics are on).
    onQuery: config.metricsToken ? (await import('../metrics/metrics.js')).observeQuery : undefined,
  });
  let sent = () => {};
  const underWay = new Promise<void>((resolve) => (sent = resolve));
  const early = db.dialect === 'postgres' ? takeEarlySchema(config.databaseUrl) : undefined;
  const schema = migrateToLatest(db, sent, early).then(
    async () => {
      if (db.dialect === 'postgres' && config.pgTableUpkeep === 'off') await warnWithoutAutovacuum(db, log);
    },
    async (err: unknown) => {
      await db.close();
      throw err;
    },
  );
  // Awaited by the caller later, perhaps after a failure of its own: not an unhandled rejection.
  schema.catch(() => {});
  await Promise.race([underWay, schema]);
  return { db, schema };
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
