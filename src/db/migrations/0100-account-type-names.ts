import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * The account's `typeNames` setting (docs/api/integrations.md): `api` answers integration types by
 * their codes, `hosted` by the hosted service's names where it has one.
 */
export const accountTypeNames: ParleyMigration = {
  async up(db) {
    await sql`alter table accounts add column type_names text not null default 'api'`.execute(db);
  },
};
