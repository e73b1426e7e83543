import type { ParleyMigration } from './helpers.js';

/**
 * Files kept in the database: with several processes on one PostgreSQL database, a file
 * uploaded through one process must be readable through every other. Bytes are stored in chunks
 * (storage/database-storage.ts), so a read streams one chunk at a time and a range reads only the
 * chunks it covers.
 */
export const fileChunks: ParleyMigration = {
  async up(db, kit) {
    await db.schema
      .createTable('file_chunks')
      .addColumn('storage_key', 'text', (c) => c.notNull())
      .addColumn('seq', 'integer', (c) => c.notNull())
      .addColumn('data', kit.dialect === 'postgres' ? 'bytea' : 'blob', (c) => c.notNull())
      .addPrimaryKeyConstraint('file_chunks_pk', ['storage_key', 'seq'])
      .execute();
  },
};
