import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * Webhook delivery queue (performance). The worker's indexes hold pending rows only
 * (partial indexes, `where status = 'pending'` written literally in the queries that use them), so
 * they stay the size of the queue, not of the delivery history, and a delivery leaves them once
 * delivered or dead instead of moving to another part of each one (three random index pages
 * written per delivered row, the bulk of a batch's commit):
 * - deliveries_pending_idx (webhook_id, next_attempt_at, id): a claim reads each open endpoint's
 *   oldest due rows, so it costs the same with 100 or 100,000 pending deliveries and never reads
 *   one endpoint's backlog for another. Replaces deliveries_due_idx (status, next_attempt_at).
 * - deliveries_lead_pending_idx (webhook_id, lead_id, id): "an earlier delivery of this lead is
 *   pending" (order per lead). Replaces deliveries_lead_idx (webhook_id, lead_id, status, id).
 * - deliveries_leased_idx (webhook_id, lease_until) of leased rows: the per-endpoint count of
 *   leases reads the leased rows alone, in endpoint order (with the endpoint second, SQLite grouped
 *   by scanning every pending row instead, in the order of the lead index: 5 ms a claim with
 *   15,000 pending). Replaces deliveries_lease_idx (status, lease_until, webhook_id), which held
 *   every row.
 */
export const deliveryQueue: ParleyMigration = {
  async up(db) {
    await sql`create index deliveries_pending_idx on deliveries (webhook_id, next_attempt_at, id) where status = 'pending'`.execute(db);
    await sql`create index deliveries_lead_pending_idx on deliveries (webhook_id, lead_id, id) where status = 'pending'`.execute(db);
    await sql`create index deliveries_leased_idx on deliveries (webhook_id, lease_until) where status = 'pending' and lease_until is not null`.execute(
      db,
    );
    for (const index of ['deliveries_due_idx', 'deliveries_lead_idx', 'deliveries_lease_idx']) await db.schema.dropIndex(index).execute();
  },
};
