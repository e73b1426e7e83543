import { sql } from 'kysely';
import { nameStatement, type Executor } from '../../db/database.js';

export interface Counter {
  count: number;
  resetAt: number;
}

/**
 * Counts one hit of `key` in its fixed window, atomically (one upsert: two processes hitting the
 * same key at once both count). A window that ended restarts at 1.
 */
export async function hitCounter(db: Executor, key: string, windowMs: number, now: number): Promise<Counter> {
  const query = sql<{ count: number; reset_at: number | string }>`
    insert into rate_limits (key, count, reset_at) values (${key}, 1, ${now + windowMs})
    on conflict (key) do update set
      count = case when rate_limits.reset_at <= ${now} then 1 else rate_limits.count + 1 end,
      reset_at = case when rate_limits.reset_at <= ${now} then ${now + windowMs} else rate_limits.reset_at end
    returning count, reset_at`.compile(db);
  // A hit of every limited request: one fixed text, prepared once per connection on PostgreSQL.
  nameStatement(query.sql);
  const { rows } = await db.executeQuery(query);
  return { count: Number(rows[0].count), resetAt: Number(rows[0].reset_at) };
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
