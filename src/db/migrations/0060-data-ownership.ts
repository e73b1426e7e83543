import type { ParleyMigration } from './helpers.js';

/**
 * Owning one's data:
 * - account_imports: the archives an installation imported, by export id, so re-running an import
 *   answers "already imported" instead of importing twice (docs/export-format.md);
 * - account_exports: export jobs of `POST /account/me/exports`, run by a background worker, with
 *   their progress and the finished archive's storage key until it expires;
 * - account_retention: how long an account keeps messages and files (no row: forever).
 */
export const dataOwnership: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('account_imports')
      .addColumn('export_id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', kit.bigint, (c) => c.notNull())
      .addColumn('report', 'text', (c) => c.notNull())
      .addColumn('created_at', kit.bigint, (c) => c.notNull())
      .execute();
    await kit
      .id(db.schema.createTable('account_exports'))
      .addColumn('account_id', kit.bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('user_id', kit.bigint, (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
      .addColumn('done', kit.bigint, (c) => c.notNull().defaultTo(0))
      .addColumn('total', kit.bigint, (c) => c.notNull().defaultTo(0))
      .addColumn('storage_key', 'text')
      .addColumn('size', kit.bigint)
      .addColumn('error', 'text')
      .addColumn('lease_until', kit.bigint)
      .addColumn('created_at', kit.bigint, (c) => c.notNull())
      .addColumn('finished_at', kit.bigint)
      .addColumn('expires_at', kit.bigint)
      .execute();
    await db.schema.createIndex('account_exports_account_idx').on('account_exports').columns(['account_id', 'id']).execute();
    await db.schema.createIndex('account_exports_status_idx').on('account_exports').columns(['status', 'id']).execute();
    await db.schema
      .createTable('account_retention')
      .addColumn('account_id', kit.bigint, (c) => c.primaryKey().references('accounts.id').onDelete('cascade'))
      .addColumn('messages_days', kit.bigint)
      .addColumn('files_days', kit.bigint)
      .addColumn('updated_at', kit.bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('messages_account_created_idx').on('messages').columns(['account_id', 'created_at']).execute();
  },
};
