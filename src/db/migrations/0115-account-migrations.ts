import type { ParleyMigration } from './helpers.js';

/**
 * `parley migrate` (docs/migrate.md) keeps its progress in the target database:
 * - account_migrations: which account a source server's account was copied into, so a second run
 *   continues into the same one;
 * - migration_ids: the source's id of each copied record and the id it got here, per kind
 *   (`lead`, `message`, ...), so nothing is copied twice.
 */
export const accountMigrations: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('account_migrations')
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('source_account_id', 'text', (c) => c.notNull())
      .addColumn('account_id', kit.bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('created_at', kit.bigint, (c) => c.notNull())
      .addColumn('finished_at', kit.bigint)
      .addPrimaryKeyConstraint('account_migrations_pk', ['source', 'source_account_id'])
      .execute();
    await db.schema
      .createTable('migration_ids')
      .addColumn('account_id', kit.bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('source_id', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('migration_ids_pk', ['account_id', 'kind', 'source_id'])
      .execute();
  },
};
