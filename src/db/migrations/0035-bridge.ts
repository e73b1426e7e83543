import type { ParleyMigration } from './helpers.js';

/**
 * The account bridge (docs/channels/bridge.md).
 *
 * `bridges`: one row per integration served by a bridge: the bridge token's hash, the login
 * prompt the bridge asked for (shown in the agent app), and which connection holds the bridge now
 * (any process may hold it; others reach it through `bridge_requests`).
 *
 * `bridge_requests`: what Parley asks of a bridge (a send, a contact check, a profile read, a login
 * answer) and its answer. The process that accepted the API call writes the row and waits; the
 * process holding the bridge's socket claims it, forwards it, and writes the answer. Rows are
 * deleted once their caller has read the answer or given up.
 */
export const bridge: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('bridges')
      .addColumn('integration_id', bigint, (c) => c.primaryKey().references('integrations.id').onDelete('cascade'))
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      /** SHA-256 (hex) of the bridge token: the token itself is shown once. */
      .addColumn('token_hash', 'text', (c) => c.notNull())
      /** JSON of the login prompt the bridge waits on (QR, phone, code, password), or null. */
      .addColumn('prompt', 'text')
      /** The connection holding the bridge (a random id per socket), or null when none does. */
      .addColumn('conn_id', 'text')
      .addColumn('connected_at', bigint)
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();

    await kit
      .id(db.schema.createTable('bridge_requests'))
      .addColumn('integration_id', bigint, (c) => c.notNull().references('integrations.id').onDelete('cascade'))
      /** send | check | profile | login */
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      /** pending (no bridge took it yet) | taken (forwarded on conn_id) | done | expired */
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('conn_id', 'text')
      .addColumn('result', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      /** Unix ms after which the caller has given up: never forwarded after it. */
      .addColumn('deadline', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('bridge_requests_claim_idx').on('bridge_requests').columns(['integration_id', 'state']).execute();
    await db.schema.createIndex('bridge_requests_conn_idx').on('bridge_requests').columns(['conn_id']).execute();
  },
};
