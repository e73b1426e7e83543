import { sql } from 'kysely';
import type { Deps } from '../domain/context.js';
import type { Leases } from '../domain/leases/leases.js';
import type { BackgroundWorker } from '../domain/workers.js';

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
 * read the whole `deliveries` table for every row (docs/performance.md, issue 19 fifth pass), and
 * dead rows of updated queues are never reclaimed. So when autovacuum is off, one process at a
 * time (lease `pg-upkeep`) looks every UPKEEP_EVERY_MS at the tables of Parley's schema and runs
 * ANALYZE, or VACUUM (ANALYZE), on each table past the server's own autovacuum thresholds
 * (`autovacuum_analyze_threshold` + `autovacuum_analyze_scale_factor` × rows, and the vacuum and
 * insert ones), as autovacuum would. It does nothing when autovacuum is on, on SQLite, or with
 * PARLEY_PG_TABLE_UPKEEP=off.
 */
export class TableUpkeep implements BackgroundWorker {
  readonly name = 'pg-upkeep';
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: Deps,
    private readonly leases: Leases,
  ) {}

  /** Starts the periodic pass when it applies (PostgreSQL with autovacuum off, upkeep on). */
  async start(): Promise<void> {
    const { db, config, log } = this.deps;
    if (db.dialect !== 'postgres' || config.pgTableUpkeep === 'off') return;
    const { rows } = await sql<{ autovacuum: string }>`show autovacuum`.execute(db.kysely);
    if (rows[0]?.autovacuum !== 'off' || this.stopped) return;
    log.info('PostgreSQL runs with autovacuum off: Parley analyzes and vacuums its own tables as they change (docs/operations.md)');
    const tick = () => {
      this.running ??= this.runOnce()
        .catch((err) => log.warn({ err }, 'table upkeep failed'))
        .finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, UPKEEP_EVERY_MS);
    this.timer.unref();
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
      if (this.stopped) break;
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

  healthy(): boolean {
    return !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }
}
