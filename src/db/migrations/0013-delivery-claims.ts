import type { ParleyMigration } from './helpers.js';

/**
 * Webhook delivery claims (performance): every claim counts each endpoint's leased
 * deliveries. Through deliveries_due_idx (status, next_attempt_at) that read every pending row and
 * its table row, so a backlog of thousands of deliveries made each claim slower (~2 ms at 5,000)
 * and the backlog longer. This index answers the count from the leased entries alone.
 */
export const deliveryClaims: ParleyMigration = {
  async up(db) {
    await db.schema.createIndex('deliveries_lease_idx').on('deliveries').columns(['status', 'lease_until', 'webhook_id']).execute();
  },
};
