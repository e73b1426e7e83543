import { sql } from 'kysely';
import type { ParleyMigration } from './helpers.js';

/**
 * PostgreSQL: `rate_limits` becomes an unlogged table. Every limited request (each
 * widget visitor message counts two limits, each sign-in one) upserts a counter there, and as a
 * logged write each upsert was a commit of its own waiting for the write-ahead log to reach the
 * disk. An unlogged table writes no WAL, so the counter's commit does not wait. What it gives up:
 * after a crash of the database server (not of Parley) the table is emptied, and every window
 * starts again at zero — a limit briefly forgotten, never a message lost
 * (docs/operations.md, "Rate limits"). SQLite keeps its counters in memory and has no such table
 * in use.
 */
export const unloggedRateLimits: ParleyMigration = {
  async up(db, kit) {
    if (kit.dialect !== 'postgres') return;
    await sql`alter table rate_limits set unlogged`.execute(db);
  },
};
