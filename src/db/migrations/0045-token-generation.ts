import type { ParleyMigration } from './helpers.js';

/**
 * A per-user token generation. `tokens_valid_after` compared whole seconds of `iat`, so a
 * login in the second of a password reset, or one that checked the old password just before the
 * reset committed, kept a valid token. Tokens now carry the generation of the user row they were
 * issued from; ending the sessions moves it on. Tokens issued before this column (no claim) count
 * as generation 0, which every existing user has.
 */
export const tokenGeneration: ParleyMigration = {
  async up(db) {
    await db.schema
      .alterTable('users')
      .addColumn('token_generation', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  },
};
