import crypto from 'node:crypto';
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { renameStatements, type Db } from './database.js';
import type { Database } from './schema.js';
import { abandonEarlySchema, type EarlySchema } from './early-schema.js';
import { snapshot as postgresSnapshot } from './snapshots/postgres.gen.js';
import { snapshot as sqliteSnapshot } from './snapshots/sqlite.gen.js';

/**
 * What every migration leaves in a new database, recorded per dialect from a run of the migrations
 * themselves (test/schema-snapshot.test.ts writes src/db/snapshots/*.gen.ts and fails while they
 * differ from a new recording): the statements in the order they ran, parameters written in,
 * without the migrator's reads and bookkeeping.
 */
export interface SchemaSnapshot {
  /** The migrations the statements come from, in the order they ran. */
  migrations: string[];
  statements: string[];
}

/**
 * Rows a migration makes with a value of its own installation: the recording leaves their inserts
 * out and a snapshot makes them anew. 0120-installation: the installation's random id.
 */
export const MADE_AT_APPLY: Record<string, () => Record<string, string>> = {
  installation: () => ({ id: crypto.randomUUID() }),
};

/** Kysely's migration lock (its PostgreSQL adapter's key), so a migrator elsewhere waits for us. */
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

/**
 * A new database (no migration ever ran: no `kysely_migration` table) gets the snapshot in one
 * transaction instead of each migration on its own, as one script (docs/performance.md, "Start-up"). False, having changed nothing,
 * when the database is not new or the snapshot is not of this build's migrations (`names`): then
 * the migrator does the work. PostgreSQL: `sent` is called once the script is on its way, so that
 * the caller can do its own work while PostgreSQL runs it. `early`: the script as dist/main.js sent
 * it (db/early-schema.ts), finished here when it is this build's snapshot, else rolled back.
 */
export async function applySnapshot(db: Db, names: readonly string[], sent?: () => void, early?: EarlySchema): Promise<boolean> {
  const snapshot = db.dialect === 'postgres' ? postgresSnapshot : sqliteSnapshot;
  const current = snapshot.migrations.length === names.length && snapshot.migrations.every((n, i) => n === names[i]);
  const script = snapshot.statements.join(';\n');
  if (early) {
    if (current && early.script === script) {
      sent?.();
      if (await finishEarly(db, early, names)) {
        renameStatements();
        return true;
      }
    } else await abandonEarlySchema(early);
  }
  if (!current) return false;
  const applied = await db.kysely
    .transaction()
    .execute(async (trx) => {
      if (db.dialect === 'postgres') {
        await sql`select pg_advisory_xact_lock(${sql.lit(KYSELY_MIGRATION_LOCK)}::bigint)`.execute(trx);
        const { rows } = await sql<{ absent: boolean }>`select to_regclass('kysely_migration') is null as absent`.execute(trx);
        if (!rows[0]?.absent) return false;
        const running = sql.raw(script).execute(trx);
        // The pg client writes the script to its socket in the promise jobs queued above, all run
        // before the next turn of the event loop: from then on the work is PostgreSQL's.
        if (sent) setImmediate(sent);
        await running;
      } else {
        const { rows } = await sql<{ n: number }>`select count(*) as n from sqlite_master where name = 'kysely_migration'`.execute(trx);
        if (rows[0]?.n) return false;
        if (!db.runScript) return false;
        db.runScript(script);
      }
      for (const query of appliedRows(trx, names)) await trx.executeQuery(query);
      return true;
    })
    // SQLite: another process made the database meanwhile (its commit came between our read and our
    // first write). The migrator then finds every migration done, or reports what is wrong.
    .catch((err: unknown) => {
      if (db.dialect === 'postgres') throw err;
      return false;
    });
  // Tables may have changed shape under the named statements of this process's connections.
  if (applied && db.dialect === 'postgres') renameStatements();
  return applied;
}

/**
 * Finishes the transaction of a script dist/main.js sent (db/early-schema.ts) as `applySnapshot`
 * finishes its own: the migrations' rows, the rows made at apply, the commit. False when the script
 * failed (nothing changed; the caller runs it again, to report why).
 */
async function finishEarly(db: Db, early: EarlySchema, names: readonly string[]): Promise<boolean> {
  if (!(await early.ran)) return false;
  try {
    for (const query of appliedRows(db.kysely, names)) await early.client.query(query.sql, [...query.parameters]);
    await early.client.query('commit');
  } finally {
    await early.client.end().catch(() => {});
  }
  return true;
}

/** The rows a new schema gets with its script: each migration's, and the rows made at apply. */
function appliedRows(db: Kysely<Database>, names: readonly string[]): CompiledQuery[] {
  const timestamp = new Date().toISOString();
  return [
    db
      .insertInto('kysely_migration' as never)
      .values(names.map((name) => ({ name, timestamp })) as never)
      .compile(),
    ...Object.entries(MADE_AT_APPLY).map(([table, row]) =>
      db
        .insertInto(table as never)
        .values(row() as never)
        .compile(),
    ),
  ];
}
