import type { Db } from '../../db/database.js';
import { KeptRows } from '../../db/kept-rows.js';
import type { UserRow } from '../../db/schema.js';
import { findUser } from '../users/users.repo.js';

/**
 * Employees' rows as the token check reads them on every authenticated request (AuthService
 * `authenticate`), kept in this process's memory on PostgreSQL. The read was one of two round
 * trips of a single-lead request (docs/performance.md). A row is kept only while the
 * database reports every change to it (db/database.ts `RowChangeFeed`, migration 0069): a change
 * made through this process is forgotten before the code that made it goes on (a removed employee's
 * next request is refused, as without the cache); one made by another process as soon as this
 * process hears its notification, moments after its commit, like a request that had started just
 * before it. A read that overlapped any change keeps nothing. SQLite reads in process, and a
 * connection pooler in transaction mode cannot carry the notifications: both read every time.
 *
 * Kept rows are frozen: requests share them.
 */
export class UserCache {
  private readonly rows: KeptRows<number, UserRow>;

  constructor(
    private readonly db: Db,
    maxRows = 10_000,
  ) {
    this.rows = new KeptRows(db, 'users', maxRows);
  }

  /** The employee `userId` of account `accountId`, as `findUser` answers it. */
  async find(accountId: number, userId: number): Promise<UserRow | undefined> {
    if (!this.rows.keeping()) return findUser(this.db.kysely, accountId, userId);
    const row = await this.rows.find(userId, () => findUser(this.db.kysely, accountId, userId));
    return row?.account_id === accountId ? row : undefined;
  }

  /** How many rows are kept (tests, metrics). */
  get size(): number {
    return this.rows.size;
  }
}
