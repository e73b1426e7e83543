import { sql } from 'kysely';
import type { Executor } from '../db/database.js';

/**
 * One batch of finished deliveries (delivered or dead) created before `cutoff`; their attempts go
 * with them (foreign key cascade). Answers how many were deleted.
 */
export async function pruneDeliveries(db: Executor, cutoff: number, batch: number): Promise<number> {
  const result = await db
    .deleteFrom('deliveries')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('deliveries')
        .select('id')
        .where('status', 'in', ['delivered', 'dead'])
        .where('created_at', '<', cutoff)
        .orderBy('id')
        .limit(batch),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** One batch of events created before `cutoff` that no delivery (pending or kept) refers to. */
export async function pruneEvents(db: Executor, cutoff: number, batch: number): Promise<number> {
  const result = await db
    .deleteFrom('events')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('events as e')
        .select('e.id')
        .where('e.created_at', '<', cutoff)
        .where(({ not, exists, selectFrom }) =>
          not(exists(selectFrom('deliveries as d').select(sql.lit(1).as('one')).whereRef('d.event_id', '=', 'e.id'))),
        )
        .orderBy('e.id')
        .limit(batch),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Coordination rows that ended: rate-limit windows, send claims and leases past their time. */
export async function pruneEnded(db: Executor, now: number): Promise<void> {
  await db.deleteFrom('rate_limits').where('reset_at', '<=', now).execute();
  await db.deleteFrom('send_keys').where('claimed_until', '<=', now).execute();
  await db.deleteFrom('leases').where('expires_at', '<=', now).execute();
}
