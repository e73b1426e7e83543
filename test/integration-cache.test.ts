import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { statementCounter } from './helpers/statements.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { IntegrationCache, integrationCache } from '../src/domain/integrations/integration-cache.js';
import { DIALECT } from './helpers/database.js';
import { createIntegration } from './helpers/fixtures.js';
import { nextChange as nextRowChange, openSecondPool } from './helpers/second-pool.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';

// Integrations' rows kept for provider webhooks on PostgreSQL (domain/integrations/integration-cache.ts):
// kept only while every change is reported, and forgotten before the change's own code goes on.
let h: Harness;
let owner: SignedUp;
beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const json = { 'content-type': 'application/json' };
/** A Telegram delivery with a wrong secret: 401 while the integration is live, 404 once it is not. */
const deliver = (integrationId: number) =>
  h.request({
    method: 'POST',
    url: `/channels/telegram/${integrationId}`,
    headers: { ...json, 'x-telegram-bot-api-secret-token': 'wrong' },
    payload: { update_id: 1 },
  });

const nextChange = (of: Db) => nextRowChange(of, 'integrations');

describe('integrations rows for provider webhooks', () => {
  it('are told apart by state and type, and a deletion made through this process refuses the very next delivery', async () => {
    const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
    const cache = integrationCache(h.services.deps.db);
    expect((await deliver(bot)).statusCode).toBe(401);
    expect((await deliver(bot)).statusCode).toBe(401);
    expect((await cache.live(bot))?.id).toBe(bot);
    expect(await cache.ofType('msgrb_bot', bot)).toMatchObject({ id: bot, deleted_at: null });
    expect(await cache.ofType('whatsapp', bot)).toBeUndefined();
    expect(await cache.live(bot + 1_000_000)).toBeUndefined();
    expect(await cache.live(2 ** 63)).toBeUndefined();
    // Each caller has a copy of its own.
    const mine = (await cache.live(bot))!;
    mine.status = 'changed here';
    expect((await cache.live(bot))?.status).not.toBe('changed here');

    await db().updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', bot).execute();
    expect((await deliver(bot)).statusCode).toBe(404);
    expect(await cache.live(bot)).toBeUndefined();
    expect(await cache.ofType('msgrb_bot', bot)).toMatchObject({ id: bot, deleted_at: h.clock.now() });
  });

  if (DIALECT === 'sqlite') {
    it('are read on every delivery on SQLite (one process reading in memory)', async () => {
      const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
      expect((await deliver(bot)).statusCode).toBe(401);
      expect(integrationCache(h.services.deps.db).size).toBe(0);
    });
  }

  if (DIALECT === 'postgres') {
    it('are kept after the first read, and a second read makes no statement', async () => {
      const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
      const { counter, statements } = statementCounter();
      const base = h.services.deps.db;
      const counted = new IntegrationCache({ ...base, kysely: base.kysely.withPlugin(counter) });
      expect((await counted.ofType('msgrb_bot', bot))?.id).toBe(bot);
      expect(statements()).toBe(1);
      expect((await counted.live(bot))?.id).toBe(bot);
      expect(await counted.ofType('whatsapp', bot)).toBeUndefined();
      expect(statements()).toBe(1);
      expect(counted.size).toBe(1);
    });

    it('are read every time with PARLEY_PG_USER_CACHE=off (a pooler in transaction mode)', async () => {
      const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
      const unkept = await openDatabase({ databaseUrl: h.database.url, dataDir: '', poolSize: 1, rowChanges: false });
      try {
        const cache = new IntegrationCache(unkept);
        expect((await cache.live(bot))?.id).toBe(bot);
        expect(cache.size).toBe(0);
      } finally {
        await unkept.close();
      }
    });

    describe('with a second process on the same database', () => {
      let second: Db;
      let terminate: (through: Db) => Promise<void>;
      let cache: IntegrationCache;
      beforeAll(async () => {
        ({ db: second, terminate } = await openSecondPool(h.database.url!, 'integration-cache'));
        cache = new IntegrationCache(second);
      });
      afterAll(() => second.close());

      it('forgets a row that the other process changed as soon as it hears of it', async () => {
        const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
        expect((await cache.live(bot))?.status).toBe('active');
        const heard = nextChange(second);
        await db().updateTable('integrations').set({ status: 'auth failure' }).where('id', '=', bot).execute();
        expect(await heard).toBe(bot);
        expect((await cache.live(bot))?.status).toBe('auth failure');
        // A row deleted outright (an account's deletion cascades) is forgotten too.
        const gone = nextChange(second);
        await db().deleteFrom('integrations').where('id', '=', bot).execute();
        expect(await gone).toBe(bot);
        expect(await cache.live(bot)).toBeUndefined();
      });

      it("does not hear changes to another installation's integrations (another schema of the database)", async () => {
        const foreign = await createHarness();
        try {
          const stranger = await foreign.signUp();
          const there = await createIntegration(foreign, stranger.accountId, 'msgrb_bot', 'there');
          const here = await createIntegration(h, owner.accountId, 'msgrb_bot', 'here');
          const heard = nextChange(second);
          // A change there, then one here: the first reported is the one here.
          await foreign.database.db.kysely.updateTable('integrations').set({ status: 'connecting' }).where('id', '=', there).execute();
          await db().updateTable('integrations').set({ status: 'connecting' }).where('id', '=', here).execute();
          expect(await heard).toBe(here);
        } finally {
          await foreign.close();
        }
      });

      it('keeps nothing from a read that a reported change overlapped', async () => {
        const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
        const before = cache.size;
        // The read waits behind a lock on one connection; meanwhile a change to that integration
        // is reported (heard by the pool's other, idle connection).
        let read: Promise<unknown> | undefined;
        await db()
          .transaction()
          .execute(async (trx) => {
            await sql`lock table integrations in access exclusive mode`.execute(trx);
            read = cache.live(bot);
            const heard = nextChange(second);
            await sql`select pg_notify('parley_integrations', current_schema() || '.' || ${bot})`.execute(db());
            expect(await heard).toBe(bot);
          });
        expect(await read).toMatchObject({ id: bot });
        expect(cache.size).toBe(before);
        // A read that nothing overlapped keeps the row.
        await cache.live(bot);
        expect(cache.size).toBe(before + 1);
      });

      it('forgets everything and reads every time while none of its connections listens', async () => {
        const bot = await createIntegration(h, owner.accountId, 'msgrb_bot', 'bot');
        await cache.live(bot);
        expect(cache.size).toBeGreaterThan(0);
        const forgotten = nextChange(second);
        // Both of the second pool's connections end while idle (a restart of PostgreSQL, a network cut).
        await terminate(h.database.db);
        expect(await forgotten).toBeUndefined();
        expect(cache.size).toBe(0);
        expect(second.changes!.listening()).toBe(false);
        // Changed while nothing listened: the next read finds the change.
        await db().updateTable('integrations').set({ status: 'unheard' }).where('id', '=', bot).execute();
        expect((await cache.live(bot))?.status).toBe('unheard');
      });
    });
  }
});
