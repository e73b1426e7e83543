import { sql } from 'kysely';
import type { Deps } from '../domain/context.js';
import type { Leases } from '../domain/leases/leases.js';
import { PeriodicWorker } from '../domain/portability/periodic-worker.js';

/** How often a process looks for tables that need statistics or a vacuum. */
export const UPKEEP_EVERY_MS = 5_000;

export interface UpkeepPass {
  /** Tables analyzed (with or without a vacuum). */
  analyzed: string[];
  /** Tables vacuumed (and analyzed in the same command). */
  vacuumed: string[];
}

/**
 * What autovacuum would do for Parley's tables, for PostgreSQL servers that run without it
 * (docs/operations.md, "Statistics without autovacuum").
 *
 * PostgreSQL keeps plans (those of Parley's named statements, and those of its own foreign-key
 * checks) until ANALYZE changes a table's statistics. Without autovacuum a plan made while a table
 * was nearly empty stays in use as it grows: a foreign-key check of a webhook delivery's attempt
 * read the whole `deliveries` table for every row (docs/performance.md), and
 * dead rows of updated queues are never reclaimed. So when autovacuum is off, one process at a
 * time (lease `pg-upkeep`) looks every UPKEEP_EVERY_MS at the tables of Parley's schema and runs
 * ANALYZE, or VACUUM (ANALYZE), on each table past the server's own autovacuum thresholds
 * (`autovacuum_analyze_threshold` + `autovacuum_analyze_scale_factor` × rows, and the vacuum and
 * insert ones), as autovacuum would. It does nothing when autovacuum is on, on SQLite, or with
 * PARLEY_PG_TABLE_UPKEEP=off.
 */
export class TableUpkeep {
  /** Whether autovacuum is off (asked once). */
  private needed: Promise<boolean> | undefined;

  constructor(
    private readonly deps: Deps,
    private readonly leases: Leases,
  ) {}

  /**
   * The background worker doing the upkeep every UPKEEP_EVERY_MS, or undefined when it cannot apply
   * (SQLite, PARLEY_PG_TABLE_UPKEEP=off). Its passes do nothing while autovacuum is on.
   */
  static worker(deps: Deps, leases: Leases): PeriodicWorker | undefined {
    if (deps.db.dialect !== 'postgres' || deps.config.pgTableUpkeep === 'off') return undefined;
    const upkeep = new TableUpkeep(deps, leases);
    return new PeriodicWorker('pg-upkeep', () => upkeep.runIfNeeded(), UPKEEP_EVERY_MS, deps.log);
  }

  /** A pass when autovacuum is off (the first call asks PostgreSQL and says so in the log). */
  async runIfNeeded(): Promise<UpkeepPass | undefined> {
    this.needed ??= sql<{ autovacuum: string }>`show autovacuum`.execute(this.deps.db.kysely).then(({ rows }) => {
      const off = rows[0]?.autovacuum === 'off';
      if (off)
        this.deps.log.info(
          'PostgreSQL runs with autovacuum off: Parley analyzes and vacuums its own tables as they change (docs/operations.md)',
        );
      return off;
    });
    let needed: boolean;
    try {
      needed = await this.needed;
    } catch (err) {
      this.needed = undefined; // asked again next time
      throw err;
    }
    return needed ? this.runOnce() : undefined;
  }

  /**
   * One pass: analyzes (or vacuums and analyzes) every table of the current schema past its
   * thresholds, one command each. Nothing on SQLite or while another process holds the lease.
   */
  async runOnce(): Promise<UpkeepPass> {
    const out: UpkeepPass = { analyzed: [], vacuumed: [] };
    const { db } = this.deps;
    if (db.dialect !== 'postgres' || !(await this.leases.hold('pg-upkeep', 3 * UPKEEP_EVERY_MS))) return out;
    // The thresholds are the server's autovacuum settings (as autovacuum reads them); a table
    // never analyzed counts as empty (reltuples -1).
    const { rows } = await sql<{ schema: string; name: string; vacuum: boolean; analyze: boolean }>`
      with t as (
        select current_setting('autovacuum_vacuum_threshold')::float8 as vt,
          current_setting('autovacuum_vacuum_scale_factor')::float8 as vs,
          coalesce(current_setting('autovacuum_vacuum_insert_threshold', true), '-1')::float8 as it,
          coalesce(current_setting('autovacuum_vacuum_insert_scale_factor', true), '0')::float8 as "is",
          current_setting('autovacuum_analyze_threshold')::float8 as at,
          current_setting('autovacuum_analyze_scale_factor')::float8 as "as"
      )
      select s.schemaname as schema, s.relname as name,
        s.n_dead_tup > t.vt + t.vs * greatest(c.reltuples, 0)
          or (t.it >= 0 and s.n_ins_since_vacuum > t.it + t."is" * greatest(c.reltuples, 0)) as vacuum,
        s.n_mod_since_analyze > t.at + t."as" * greatest(c.reltuples, 0) as analyze
      from pg_stat_user_tables s join pg_class c on c.oid = s.relid cross join t
      where s.schemaname = current_schema() and c.relpersistence <> 't'
      order by s.relname`.execute(db.kysely);
    for (const row of rows) {
      const table = sql.id(row.schema, row.name);
      if (row.vacuum) {
        await sql`vacuum (analyze) ${table}`.execute(db.kysely);
        out.vacuumed.push(row.name);
        out.analyzed.push(row.name);
      } else if (row.analyze) {
        await sql`analyze ${table}`.execute(db.kysely);
        out.analyzed.push(row.name);
      }
    }
    return out;
  }
}
