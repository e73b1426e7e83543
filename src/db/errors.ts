/** True for a unique-constraint violation on either dialect (a concurrent insert won the race). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string } | null;
  return !!e && (e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_UNIQUE' || e.code === 'SQLITE_CONSTRAINT_PRIMARYKEY');
}

/**
 * True for PostgreSQL's refusals of a value itself: a NUL character in text (22021) or JSON
 * (22P05), a number out of its column's range (22003). Input validation refuses these first; this
 * is the safety net that keeps one that slipped through a 400 rather than a 500 (SQLite stores them).
 */
export function isUnstorableValue(err: unknown): boolean {
  const e = err as { code?: string } | null;
  return !!e && (e.code === '22021' || e.code === '22P05' || e.code === '22003');
}

/**
 * True when PostgreSQL refused a kept prepared statement because a schema change altered its
 * result columns ("cached plan must not change result type", 0A000): the statement is prepared
 * anew under a new name (db/database.ts), and a transaction it aborted may simply run again.
 */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return !!e && e.code === '0A000' && /cached plan/.test(e.message ?? '');
}

/** True when PostgreSQL gave up waiting for a lock after `lock_timeout` (lock_not_available, 55P03). */
export function isLockNotAvailable(err: unknown): boolean {
  const e = err as { code?: string } | null;
  return !!e && e.code === '55P03';
}
