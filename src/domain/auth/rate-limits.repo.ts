import { sql } from 'kysely';
import { executeNamed, type Executor } from '../../db/database.js';
import { bigintArray as bigint, textArray as text } from '../../db/pg-arrays.js';

export interface Counter {
  count: number;
  resetAt: number;
}

/**
 * One hit of a request: on `first`, and on `second` only when that hit kept `first` within
 * `firstLimit` (as two calls in turn would, where a refusal by the first stops the request).
 * `units` (default 1) counts the hit and the hits a process leases with it (rate-leases.ts).
 */
export interface Hit {
  first: { key: string; windowMs: number; limit: number; units?: number };
  second?: { key: string; windowMs: number; units?: number };
}

/** What a hit counted, each key's count after the hit's units: `second` is undefined when it was not counted. */
export interface Counted {
  first: Counter;
  second: Counter | undefined;
}

/**
 * PostgreSQL: the hits of several requests counted in one statement, in their order, atomically
 * per key (two processes hitting the same key at once both count). Each key's row is written once
 * for the batch, by the units of its hits; each hit is told the count its units brought the key to,
 * as one statement per hit would have answered it. The second key is counted when the first unit
 * of the first was within its limit. A window that ended restarts at the batch's hits.
 * A key must not be a `first` of one hit and a `second` of another here (the caller splits such a
 * batch): the statement writes each key's row once. Rows are written in key order, firsts before
 * seconds, so two processes' batches lock shared keys in the same order and never deadlock (a
 * widget visitor's key is always a first, its address's always a second).
 */
export async function hitCounters(db: Executor, hits: Hit[], now: number): Promise<Counted[]> {
  // The upsert's conflict clause: the batch's hits added in the key's window, or a new window
  // (the inserted row's count and `reset_at`) when the stored one ended at `now`.
  const countHits = sql`on conflict (key) do update set
      count = case when rate_limits.reset_at <= ${now}::bigint then excluded.count else rate_limits.count + excluded.count end,
      reset_at = case when rate_limits.reset_at <= ${now}::bigint then excluded.reset_at else rate_limits.reset_at end
    returning key, count, reset_at`;
  const query = sql<{ c1: number; r1: number | string; c2: number | null; r2: number | string | null }>`
    with u as (
      select * from unnest(${text(hits.map((h) => h.first.key))}, ${bigint(hits.map((h) => now + h.first.windowMs))},
        ${bigint(hits.map((h) => (h.second ? h.first.limit : null)))}, ${text(hits.map((h) => h.second?.key ?? null))},
        ${bigint(hits.map((h) => (h.second ? now + h.second.windowMs : null)))}, ${bigint(hits.map((h) => h.first.units ?? 1))},
        ${bigint(hits.map((h) => (h.second ? (h.second.units ?? 1) : null)))}) with ordinality as u(k1, reset1, limit1, k2, reset2, n1, n2, ord)
    ), a as (
      insert into rate_limits (key, count, reset_at) select k1, sum(n1), min(reset1) from u group by k1 order by k1 ${countHits}
    ), f as (
      -- Each hit's count: the key's count after the batch, less the units of the hits after it.
      select u.ord, u.k2, u.reset2, u.n2, u.limit1, a.reset_at as r1,
        a.count - sum(u.n1) over (partition by u.k1 order by u.ord desc) + u.n1 as c1, u.n1
      from u join a on a.key = u.k1
    ), b as (
      insert into rate_limits (key, count, reset_at)
      select k2, sum(n2), min(reset2) from f where k2 is not null and c1 - n1 < limit1 group by k2 order by k2 ${countHits}
    )
    select f.c1::int as c1, f.r1,
      (b.count - sum(f.n2) filter (where b.key is not null) over (partition by f.k2 order by f.ord desc) + f.n2)::int as c2, b.reset_at as r2
    from f left join b on b.key = f.k2 and f.c1 - f.n1 < f.limit1
    order by f.ord`.compile(db);
  // One fixed text whatever the batch: prepared once per connection.
  const rows = await executeNamed(db, query);
  if (rows.length !== hits.length) throw new Error('a batch of rate limit hits was not counted whole');
  return rows.map((row) => ({
    first: { count: Number(row.c1), resetAt: Number(row.r1) },
    second: row.c2 === null ? undefined : { count: Number(row.c2), resetAt: Number(row.r2) },
  }));
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
