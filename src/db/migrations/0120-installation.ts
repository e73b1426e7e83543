import crypto from 'node:crypto';
import type { ParleyMigration } from './helpers.js';

/**
 * The installation's identity: one row, a random id made once, shared by every process on the
 * database and kept by backups. `GET /health` names it so that `parley doctor` can tell that
 * PARLEY_PUBLIC_URL reaches this installation rather than another server (docs/deploy.md).
 */
export const installation: ParleyMigration = {
  async up(db) {
    await db.schema
      .createTable('installation')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .execute();
    await db.insertInto('installation').values({ id: crypto.randomUUID() }).execute();
  },
};
