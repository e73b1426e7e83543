import { sql } from 'kysely';
import { openDatabase, type ChangedTable, type Db } from '../../src/db/database.js';

/**
 * Another process's pool on a test's PostgreSQL database, as a second Parley process would open it:
 * `size` connections, all opened (so all listen for row changes from then on). They are named
 * (`application_name`), so that `terminate` ends only them: a backend's pid may be reused by
 * another test file's connection once this one's closed.
 */
export async function openSecondPool(
  databaseUrl: string,
  label: string,
  size = 2,
): Promise<{ db: Db; terminate: (through: Db) => Promise<void> }> {
  const application = `parley-${label}-${process.pid}-${Date.now()}`;
  const url = new URL(databaseUrl);
  url.searchParams.set('application_name', application);
  const db = await openDatabase({ databaseUrl: url.toString(), dataDir: '', poolSize: size });
  const pids = new Set<number>();
  const pid = sql<{ pid: number }>`select pg_backend_pid() as pid`;
  // Each connection held while the next opens.
  const open = async (n: number): Promise<void> => {
    if (n === 0) return;
    await db.kysely.connection().execute(async (c) => {
      pids.add((await pid.execute(c)).rows[0]!.pid);
      await open(n - 1);
    });
  };
  await open(size);
  if (pids.size !== size) throw new Error(`the second pool opened ${pids.size} connections, not ${size}`);
  return {
    db,
    // Every connection of the pool ends while idle (a restart of PostgreSQL, a network cut), ended
    // through another pool.
    terminate: async (through) => {
      await sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${application}`.execute(through.kysely);
    },
  };
}

/** Resolves with the next change to `table` that the database reports to `db`'s pool (undefined: anything). */
export function nextChange(db: Db, table: ChangedTable): Promise<number | undefined> {
  return new Promise((resolve) => {
    const off = db.changes!.subscribe(table, (id) => {
      off();
      resolve(id);
    });
  });
}
