import { sql } from 'kysely';
import { executeNamed, type Executor } from '../../db/database.js';

export interface Counter {
  count: number;
  resetAt: number;
}

/**
 * The upsert's conflict clause: one more hit in the key's window, or a new window (the inserted
 * row's `reset_at`) when the stored one ended at `now`.
 */
const countHit = (now: number) => sql`on conflict (key) do update set
    count = case when rate_limits.reset_at <= ${now} then 1 else rate_limits.count + 1 end,
    reset_at = case when rate_limits.reset_at <= ${now} then excluded.reset_at else rate_limits.reset_at end
  returning count, reset_at`;

/**
 * Counts one hit of `key` in its fixed window, atomically (one upsert: two processes hitting the
 * same key at once both count). A window that ended restarts at 1.
 */
export async function hitCounter(db: Executor, key: string, windowMs: number, now: number): Promise<Counter> {
  const query = sql<{ count: number; reset_at: number | string }>`
    insert into rate_limits (key, count, reset_at) values (${key}, 1, ${now + windowMs}) ${countHit(now)}`.compile(db);
  // A hit of every limited request: one fixed text, prepared once per connection on PostgreSQL.
  const rows = await executeNamed(db, query);
  return { count: Number(rows[0].count), resetAt: Number(rows[0].reset_at) };
}

/**
 * Two limits of one request in one statement (one round trip on PostgreSQL): a hit on `first`, and
 * on `second` only when that hit kept `first` within `firstLimit` (as two calls in turn would,
 * where a refusal by the first stops the request). `second` is undefined when it was not counted.
 */
export async function hitCounterThen(
  db: Executor,
  first: { key: string; windowMs: number; limit: number },
  second: { key: string; windowMs: number },
  now: number,
): Promise<{ first: Counter; second: Counter | undefined }> {
  const upsert = (key: string, resetAt: number) =>
    sql`insert into rate_limits (key, count, reset_at) select ${key}::text, 1, ${resetAt}::bigint`;
  const query = sql<{ c1: number; r1: number | string; c2: number | null; r2: number | string | null }>`
    with a as (${upsert(first.key, now + first.windowMs)} ${countHit(now)}),
      b as (${upsert(second.key, now + second.windowMs)} where (select count from a) <= ${first.limit} ${countHit(now)})
    select a.count as c1, a.reset_at as r1, b.count as c2, b.reset_at as r2 from a left join b on true`.compile(db);
  const [row] = await executeNamed(db, query);
  return {
    first: { count: Number(row.c1), resetAt: Number(row.r1) },
    second: row.c2 === null ? undefined : { count: Number(row.c2), resetAt: Number(row.r2) },
  };
}

export async function readCounter(db: Executor, key: string, now: number): Promise<Counter | undefined> {
  const row = await db
    .selectFrom('rate_limits')
    .select(['count', 'reset_at'])
    .where('key', '=', key)
    .where('reset_at', '>', now)
    .executeTakeFirst();
  return row ? { count: Number(row.count), resetAt: Number(row.reset_at) } : undefined;
}

export async function deleteCounter(db: Executor, key: string): Promise<void> {
  await db.deleteFrom('rate_limits').where('key', '=', key).execute();
}

/** Drops windows that ended (they would restart at 1 anyway). */
export async function deleteEndedCounters(db: Executor, now: number): Promise<number> {
  const result = await db.deleteFrom('rate_limits').where('reset_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
