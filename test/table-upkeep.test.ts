import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { TableUpkeep } from '../src/db/table-upkeep.js';
import { Leases } from '../src/domain/leases/leases.js';
import { DIALECT } from './helpers/database.js';
import { createHarness, type Harness } from './helpers/harness.js';

// The table upkeep stands in for autovacuum on a PostgreSQL server that runs without it
// (docs/operations.md, "Statistics without autovacuum"): kept plans made while a table was small
// are planned again once it has grown, and dead rows are reclaimed.
let h: Harness;
let accountId: number;
beforeAll(async () => {
  h = await createHarness();
  accountId = (await h.signUp()).accountId;
});
afterAll(() => h.close());

const upkeep = (leases = h.services.leases) => new TableUpkeep(h.services.deps, leases);

describe('table upkeep', () => {
  it('runs as a background worker only on PostgreSQL, unless PARLEY_PG_TABLE_UPKEEP is off', () => {
    const { deps, leases } = h.services;
    expect(TableUpkeep.worker(deps, leases)?.name).toBe(DIALECT === 'postgres' ? 'pg-upkeep' : undefined);
    expect(TableUpkeep.worker({ ...deps, config: { ...deps.config, pgTableUpkeep: 'off' } }, leases)).toBeUndefined();
  });

  if (DIALECT === 'sqlite') {
    it('does nothing on SQLite, which has no autovacuum to stand in for', async () => {
      expect(await upkeep().runOnce()).toEqual({ analyzed: [], vacuumed: [] });
    });
  }

  // PostgreSQL only: SQLite has neither autovacuum nor kept generic plans.
  if (DIALECT === 'postgres') {
    /** Runs `work` on one connection and makes its table statistics visible at once (PostgreSQL 15+). */
    const counted = (work: string) =>
      h.database.db.kysely.connection().execute(async (conn) => {
        await sql.raw(work).execute(conn);
        await sql`select pg_stat_force_next_flush()`.execute(conn);
      });
    const insertEvents = (n: number) =>
      counted(
        `insert into events (account_id, type, lead_id, payload, created_at)
         select ${accountId}, 'lead.changed', null, '{}', g from generate_series(1, ${n}) g`,
      );

    /** The planner's row count of `events` (pg_class.reltuples), which only ANALYZE or VACUUM sets. */
    const rowsEstimate = async () => {
      const { rows } = await sql<{ n: number }>`
        select reltuples::float8 as n from pg_class where oid = 'events'::regclass`.execute(h.database.db.kysely);
      return Number(rows[0]?.n);
    };

    it('analyzes a grown table, so a plan kept from when it was small is planned again', async () => {
      await insertEvents(1);
      await sql`analyze events`.execute(h.database.db.kysely);
      await h.database.db.kysely.connection().execute(async (conn) => {
        await sql`set plan_cache_mode = force_generic_plan`.execute(conn);
        await sql`prepare kept(bigint) as select payload from events where id = $1`.execute(conn);
        const plan = async () => JSON.stringify((await sql`explain (format json) execute kept(1)`.execute(conn)).rows);
        // Made on statistics of a one-row table: a sequential scan (fine at that size).
        expect(await plan()).toContain('Seq Scan');
        await insertEvents(3000);
        // Nothing analyzes meanwhile: the statistics still say one row. (The kept plan is not asserted
        // here: a shared-invalidation reset, which other sessions' DDL can cause at any time, replans
        // it on the table's current size.)
        expect(await rowsEstimate()).toBeLessThanOrEqual(1);
        const pass = await upkeep().runOnce();
        expect(pass.analyzed).toContain('events');
        expect(await rowsEstimate()).toBeGreaterThanOrEqual(3000);
        expect(await plan()).toContain('events_pkey');
        await sql`deallocate kept`.execute(conn);
        await sql`reset plan_cache_mode`.execute(conn);
      });
      // Nothing changed since: the next pass leaves the table alone.
      expect((await upkeep().runOnce()).analyzed).not.toContain('events');
    });

    it('vacuums a table whose dead rows pass the threshold', async () => {
      const stats = async () => {
        const { rows } = await sql<{ dead: string; vacuums: string }>`
          select n_dead_tup as dead, vacuum_count as vacuums from pg_stat_user_tables
          where schemaname = current_schema() and relname = 'events'`.execute(h.database.db.kysely);
        return { dead: Number(rows[0]?.dead), vacuums: Number(rows[0]?.vacuums) };
      };
      await counted(`update events set payload = '{"updated":true}'`);
      const before = await stats();
      expect(before.dead).toBeGreaterThan(3000);
      const pass = await upkeep().runOnce();
      expect(pass.vacuumed).toContain('events');
      // A VACUUM ran on the table. How many dead rows it could reclaim depends on the snapshots of
      // other sessions of the database (the test files beside this one), not on the upkeep.
      expect((await stats()).vacuums).toBe(before.vacuums + 1);
    });

    it('runs in one process at a time (lease pg-upkeep)', async () => {
      const first = upkeep();
      await first.runOnce();
      await insertEvents(5000);
      const other = upkeep(new Leases(h.services.deps));
      expect(await other.runOnce()).toEqual({ analyzed: [], vacuumed: [] });
      expect((await first.runOnce()).analyzed).toContain('events');
    });
  }
});
