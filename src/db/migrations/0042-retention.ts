import type { ParleyMigration } from './helpers.js';

/**
 * Pruning old events: an event is deleted once it is past the retention period and no
 * delivery of it is pending; deleting it cascades to its deliveries. Both the "no delivery left"
 * check and the cascade look deliveries up by event, which without this index read the whole
 * table once per event.
 */
export const retention: ParleyMigration = {
  async up(db) {
    await db.schema.createIndex('deliveries_event_idx').on('deliveries').column('event_id').execute();
  },
};
