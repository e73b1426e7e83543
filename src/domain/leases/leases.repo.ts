import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';

/**
 * Takes or renews the lease `name` for `holder` until `until`: granted when nobody holds it, when
 * `holder` already does, or when the last holder's lease ran out. One statement, so two processes
 * asking at once cannot both get it.
 */
export async function acquireLease(db: Executor, name: string, holder: string, now: number, until: number): Promise<boolean> {
  const { rows } = await sql<{ name: string }>`
    insert into leases (name, holder, expires_at) values (${name}, ${holder}, ${until})
    on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
      where leases.holder = excluded.holder or leases.expires_at <= ${now}
    returning name`.execute(db);
  return rows.length === 1;
}

/** Gives the lease up (only when `holder` has it), so another process may take it at once. */
export async function releaseLease(db: Executor, name: string, holder: string): Promise<void> {
  await db.deleteFrom('leases').where('name', '=', name).where('holder', '=', holder).execute();
}
