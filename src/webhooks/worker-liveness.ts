import crypto from 'node:crypto';
import os from 'node:os';
import { sql } from 'kysely';
import type pg from 'pg';
import { schemaLockKey, type Db } from '../db/database.js';
import type { Logger } from '../domain/context.js';

/**
 * The first key of the delivery workers' liveness locks (taken in Parley's schema: schemaLockKey).
 * Beside INGEST_LANE_LOCK (7311002) and ACCOUNT_CREATION_LOCK (7311001).
 */
export const WORKER_LIVENESS_LOCK = 7311003;

/** How often a PostgreSQL worker looks for leases of dead workers (docs/operations.md). */
export const LIVENESS_CHECK_MS = 1_000;

/**
 * A delivery worker's lease owner name, `<host>:<pid>:<8 hex digits>`; on PostgreSQL the hex digits
 * are the second key of the session advisory lock that proves the worker alive.
 */
export function newWorkerId(): string {
  const key = crypto.randomInt(1, 0x7fffffff);
  return `${os.hostname()}:${process.pid}:${key.toString(16).padStart(8, '0')}`;
}

/** The liveness key a worker id names, or undefined for ids not made by {@link newWorkerId}. */
export function livenessKeyOf(workerId: string): number | undefined {
  const m = /:([0-9a-f]{8})$/.exec(workerId);
  if (!m) return undefined;
  const key = Number.parseInt(m[1], 16);
  return key > 0 && key <= 0x7fffffff ? key : undefined;
}

/**
 * PostgreSQL: the session advisory lock (WORKER_LIVENESS_LOCK, the worker's key) held on a
 * connection of its own for as long as the worker lives. PostgreSQL lets go of it when that
 * connection ends, which a killed process's does at once (its socket closes), so other processes
 * see the worker gone without waiting for a timeout. Only Parley's server processes open such
 * connections and choose the keys: no request, and no account's data, names one.
 */
export class LivenessLock {
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    private readonly key: number,
    private readonly log: Logger,
    /** Called whenever the lock is had (again): the worker's claims resume. */
    private readonly onHeld: () => void,
  ) {}

  /** Whether the lock is held now: a worker without it claims nothing (others may free its leases). */
  get held(): boolean {
    return this.client !== undefined;
  }

  /** Takes the lock (waiting while another session holds it); retries on its own after a failure. */
  async acquire(): Promise<void> {
    const pgModule = (await import('pg')).default;
    const c = new pgModule.Client({ connectionString: this.url });
    c.on('error', (err) => this.lost(c, err));
    c.on('end', () => this.lost(c));
    try {
      await c.connect();
      await c.query(`select pg_advisory_lock(${schemaLockKey(WORKER_LIVENESS_LOCK)}, ${this.key})`);
    } catch (err) {
      await c.end().catch(() => {});
      this.lost(c, err);
      return;
    }
    if (this.closed) return void (await c.end().catch(() => {}));
    this.client = c;
    this.onHeld();
  }

  private lost(c: pg.Client, err?: unknown): void {
    if (this.client === c) this.client = undefined;
    if (this.closed || this.retry) return;
    this.log.warn({ err }, 'webhook worker liveness connection lost; claims wait until it is back');
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.acquire();
    }, LIVENESS_CHECK_MS);
    this.retry.unref();
  }

  async release(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => {});
  }
}

/**
 * PostgreSQL: gives back the leases of workers whose liveness lock is gone (their process died),
 * so their deliveries are claimed at once rather than when the leases run out, and stop counting
 * against their endpoints' pools. The lease owners are read before the locks: an owner that had
 * leases and then holds no lock is dead for good (a worker takes its lock before its first claim,
 * and ids are never reused), so no live worker's lease is freed. Owners whose ids name no key
 * (made elsewhere) keep their leases until they run out. Returns how many leases were freed.
 */
export async function releaseDeadWorkersLeases(db: Db): Promise<number> {
  const owners = await sql<{ leased_by: string }>`
    select distinct leased_by from deliveries where status = 'pending' and lease_until is not null and leased_by is not null`.execute(
    db.kysely,
  );
  const keyed = owners.rows.flatMap((r) => {
    const key = livenessKeyOf(r.leased_by);
    return key === undefined ? [] : [{ owner: r.leased_by, key }];
  });
  if (!keyed.length) return 0;
  const live = await sql<{ key: string | number }>`
    select objid::bigint as key from pg_locks
    where locktype = 'advisory' and granted and objsubid = 2
      and database = (select oid from pg_database where datname = current_database())
      and classid::bigint = ((${sql.raw(schemaLockKey(WORKER_LIVENESS_LOCK))})::bigint & 4294967295)`.execute(db.kysely);
  const alive = new Set(live.rows.map((r) => Number(r.key)));
  const dead = keyed.filter((k) => !alive.has(k.key)).map((k) => k.owner);
  if (!dead.length) return 0;
  const freed = await db.kysely
    .updateTable('deliveries')
    .set({ lease_until: null, leased_by: null })
    .where('status', '=', 'pending')
    .where('leased_by', 'in', dead)
    .executeTakeFirst();
  return Number(freed.numUpdatedRows);
}

/**
 * SQLite: one process owns the data folder, so at its worker's start every lease is of an earlier
 * run (a crash, or a kill) and is given back at once. Returns how many.
 */
export async function releaseEarlierRunsLeases(db: Db, workerId: string): Promise<number> {
  const freed = await db.kysely
    .updateTable('deliveries')
    .set({ lease_until: null, leased_by: null })
    .where('status', '=', 'pending')
    .where('lease_until', 'is not', null)
    .where('leased_by', '!=', workerId)
    .executeTakeFirst();
  return Number(freed.numUpdatedRows);
}
