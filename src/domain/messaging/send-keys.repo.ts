import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';

/**
 * Claims (lead, customId) for a send until `until`: inserted, or taken over from a claim that
 * expired (its process died mid-send). False while another claim is live: the primary key of
 * send_keys is what makes one send per key hold across processes.
 */
export async function claimSendKey(db: Executor, leadId: number, customId: string, now: number, until: number): Promise<boolean> {
  const { rows } = await sql<{ lead_id: number }>`
    insert into send_keys (lead_id, custom_id, claimed_until, created_at) values (${leadId}, ${customId}, ${until}, ${now})
    on conflict (lead_id, custom_id) do update set claimed_until = excluded.claimed_until, created_at = excluded.created_at
      where send_keys.claimed_until <= ${now}
    returning lead_id`.execute(db);
  return rows.length === 1;
}

/** Ends a claim: the send failed, or its messages are stored (call it in their transaction). */
export async function releaseSendKey(db: Executor, leadId: number, customId: string): Promise<void> {
  await db.deleteFrom('send_keys').where('lead_id', '=', leadId).where('custom_id', '=', customId).execute();
}

export async function sendKeyHeld(db: Executor, leadId: number, customId: string, now: number): Promise<boolean> {
  const row = await db
    .selectFrom('send_keys')
    .select('lead_id')
    .where('lead_id', '=', leadId)
    .where('custom_id', '=', customId)
    .where('claimed_until', '>', now)
    .executeTakeFirst();
  return row !== undefined;
}
