import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { statementCounter } from './helpers/statements.js';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { UserCache } from '../src/domain/auth/user-cache.js';
import { updateUser } from '../src/domain/users/users.repo.js';
import { DIALECT } from './helpers/database.js';
import { nextChange as nextUserChange, openSecondPool } from './helpers/second-pool.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';

// Employees' rows kept for the token check on PostgreSQL (domain/auth/user-cache.ts): kept only
// while every change is reported, and forgotten before the change's own request answers.
let h: Harness;
let owner: SignedUp;
beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});
afterAll(() => h.close());

const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });

const nextChange = (db: Db) => nextUserChange(db, 'users');

describe('employees rows for the token check', () => {
  if (DIALECT === 'sqlite') {
    it('are read on every request on SQLite (one process reading in memory)', async () => {
      expect(h.database.db.changes).toBeUndefined();
      expect((await me(owner.access)).statusCode).toBe(200);
      expect(h.services.auth.users.size).toBe(0);
    });
  }

  if (DIALECT === 'postgres') {
    it('are kept after the first request, and a second request does not read the row again', async () => {
      expect((await me(owner.access)).statusCode).toBe(200);
      expect(h.services.auth.users.size).toBeGreaterThan(0);
      const { counter, statements } = statementCounter();
      const db = h.services.deps.db;
      const counted = new UserCache({ ...db, kysely: db.kysely.withPlugin(counter) });
      await counted.find(owner.accountId, owner.userId);
      expect(statements()).toBe(1);
      await counted.find(owner.accountId, owner.userId);
      expect(statements()).toBe(1);
      // Another account's id finds nothing, as the read scoped by account does.
      expect(await counted.find(owner.accountId + 1, owner.userId)).toBeUndefined();
    });

    it('a sign-out everywhere made through this process refuses the old token at the very next request', async () => {
      const other = await h.signUp();
      expect((await me(other.access)).statusCode).toBe(200); // the row is kept now
      expect((await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions', token: other.access })).statusCode).toBe(200);
      expect((await me(other.access)).statusCode).toBe(401);
    });

    it('are read every time with PARLEY_PG_USER_CACHE=off (a pooler in transaction mode)', async () => {
      expect(loadConfig({ PARLEY_PG_USER_CACHE: 'off' }).pgRowCaches).toBe(false);
      const unkept = await openDatabase({ databaseUrl: h.database.url, dataDir: '', poolSize: 1, rowChanges: false });
      try {
        const cache = new UserCache(unkept);
        expect((await cache.find(owner.accountId, owner.userId))?.id).toBe(owner.userId);
        expect(cache.size).toBe(0);
      } finally {
        await unkept.close();
      }
    });

    describe('with a second process on the same database', () => {
      let second: Db;
      let terminate: (through: Db) => Promise<void>;
      let cache: UserCache;
      beforeAll(async () => {
        ({ db: second, terminate } = await openSecondPool(h.database.url!, 'user-cache'));
        cache = new UserCache(second);
      });
      afterAll(() => second.close());

      it('forgets a row that the other process changed as soon as it hears of it', async () => {
        expect((await cache.find(owner.accountId, owner.userId))?.name).toBe('Owner');
        const heard = nextChange(second);
        await updateUser(h.database.db.kysely, owner.accountId, owner.userId, { name: 'Renamed' });
        expect(await heard).toBe(owner.userId);
        expect((await cache.find(owner.accountId, owner.userId))?.name).toBe('Renamed');
      });

      it("does not hear changes to another installation's employees (another schema of the database)", async () => {
        const foreign = await createHarness();
        try {
          const stranger = await foreign.signUp();
          const other = await h.signUp();
          expect(stranger.userId).not.toBe(other.userId);
          const heard = nextChange(second);
          // A change there, then one here: the first reported is the one here.
          await updateUser(foreign.database.db.kysely, stranger.accountId, stranger.userId, { name: 'Elsewhere' });
          await updateUser(h.database.db.kysely, other.accountId, other.userId, { name: 'Here' });
          expect(await heard).toBe(other.userId);
        } finally {
          await foreign.close();
        }
      });

      it('keeps nothing from a read that a reported change overlapped', async () => {
        const before = cache.size;
        const other = await h.signUp();
        // The read waits behind a lock on one connection; meanwhile a change to that employee is
        // reported (heard by the pool's other, idle connection: a busy one hears at its next rest).
        let read: Promise<unknown> | undefined;
        await h.database.db.kysely.transaction().execute(async (trx) => {
          await sql`lock table users in access exclusive mode`.execute(trx);
          read = cache.find(other.accountId, other.userId);
          const heard = nextChange(second);
          await sql`select pg_notify('parley_users', current_schema() || '.' || ${other.userId})`.execute(h.database.db.kysely);
          expect(await heard).toBe(other.userId);
        });
        expect(await read).toMatchObject({ id: other.userId });
        expect(cache.size).toBe(before);
        // A read that nothing overlapped keeps the row.
        await cache.find(other.accountId, other.userId);
        expect(cache.size).toBe(before + 1);
      });

      it('forgets everything and reads every time while none of its connections listens', async () => {
        await cache.find(owner.accountId, owner.userId);
        expect(cache.size).toBeGreaterThan(0);
        const forgotten = nextChange(second);
        // Both of the second pool's connections end while idle (a restart of PostgreSQL, a network cut).
        await terminate(h.database.db);
        expect(await forgotten).toBeUndefined();
        expect(cache.size).toBe(0);
        expect(second.changes!.listening()).toBe(false);
        // Changed while nothing listened: the next read finds the change.
        await updateUser(h.database.db.kysely, owner.accountId, owner.userId, { name: 'Unheard' });
        expect((await cache.find(owner.accountId, owner.userId))?.name).toBe('Unheard');
      });
    });
  }
});
