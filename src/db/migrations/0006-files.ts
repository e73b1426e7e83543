import type { ParleyMigration } from './helpers.js';

/**
 * Uploaded files (`POST /messaging/upload`). The id is 128 random bits (base64url): it is the
 * capability in the public, unauthenticated file URL. `num` is a per-account integer alias for the
 * upload shapes whose media id is an integer (docs/api/resources.md "Uploaded media object"). The bytes live in
 * the storage layer under `storage_key`.
 */
export const files: ParleyMigration = {
  async up(db, kit) {
    const { bigint } = kit;
    await db.schema
      .createTable('files')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', bigint, (c) => c.notNull().references('accounts.id').onDelete('cascade'))
      .addColumn('num', bigint, (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('mime', 'text', (c) => c.notNull())
      .addColumn('size', bigint, (c) => c.notNull())
      .addColumn('md5', 'text', (c) => c.notNull())
      .addColumn('storage_key', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('files_account_num_idx').on('files').columns(['account_id', 'num']).unique().execute();
  },
};
