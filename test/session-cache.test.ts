import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { statementCounter } from './helpers/statements.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { IntegrationCache } from '../src/domain/integrations/integration-cache.js';
import { SessionCache } from '../src/domain/widget/session-cache.js';
import { DIALECT } from './helpers/database.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { nextChange as nextRowChange, openSecondPool } from './helpers/second-pool.js';
import { connectWidget } from './widget-support.js';

// Widget visitors' sessions kept for the visitors' requests on PostgreSQL
// (domain/widget/session-cache.ts): kept only while every change to a visitor and its sessions is
// reported, and forgotten before the change's own code goes on.
let h: Harness;
let owner: SignedUp;
beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const json = { 'content-type': 'application/json' };
const hashOf = (token: string) => crypto.createHash('sha256').update(token, 'utf8').digest('hex');
let address = 0;
/** A session of its own address: the suite's other requests share the per-address limits. */
const start = async (payload: Record<string, unknown>) => {
  const res = await h.request({
    method: 'POST',
    url: '/widget/v1/sessions',
    payload,
    headers: json,
    remoteAddress: `10.9.0.${++address}`,
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { token: string; visitor: { id: string } };
};
const say = (token: string, clientId: string) =>
  h.request({
    method: 'POST',
    url: '/widget/v1/messages',
    payload: { clientId, text: 'hello' },
    headers: { ...json, authorization: `Bearer ${token}` },
    remoteAddress: `10.9.1.${++address}`,
  });
const profileName = async (publicId: string) =>
  (await db().selectFrom('profiles').select('name').where('social_id', '=', publicId).executeTakeFirstOrThrow()).name;

describe("widget visitors' sessions for the visitors' requests", () => {
  it('a visitor renamed by resuming its session writes under its new name at the very next message; a deleted one is refused', async () => {
    const w = await connectWidget(h, owner);
    const { token, visitor } = await start({ key: w.key, name: 'First name' });
    expect((await say(token, 'a')).statusCode).toBe(200);
    expect((await say(token, 'b')).statusCode).toBe(200);
    expect(await profileName(visitor.id)).toBe('First name');
    if (DIALECT === 'postgres') expect(h.services.widget.sessions.kept.size).toBeGreaterThan(0);

    expect((await start({ key: w.key, token, name: 'Second name' })).visitor.id).toBe(visitor.id);
    expect((await say(token, 'c')).statusCode).toBe(200);
    expect(await profileName(visitor.id)).toBe('Second name');

    await db().deleteFrom('widget_visitors').where('public_id', '=', visitor.id).execute();
    expect((await say(token, 'd')).statusCode).toBe(401);
  });

  it("refuses an employee's send to a widget lead as soon as its visitor is deleted", async () => {
    const w = await connectWidget(h, owner);
    const { token, visitor } = await start({ key: w.key });
    expect((await say(token, 'a')).statusCode).toBe(200);
    const { id: leadId } = await db()
      .selectFrom('leads')
      .innerJoin('sources', (j) =>
        j.onRef('sources.customer_id', '=', 'leads.customer_id').onRef('sources.integration_id', '=', 'leads.integration_id'),
      )
      .select('leads.id')
      .where('sources.external_id', '=', visitor.id)
      .executeTakeFirstOrThrow();
    const reply = () =>
      h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, payload: { message: { text: 'Hello' } }, token: owner.access });
    expect((await reply()).statusCode).toBe(200);
    expect((await reply()).statusCode).toBe(200);
    if (DIALECT === 'postgres') expect(h.services.widget.sessions.kept.publicIds).toBeGreaterThan(0);

    await db().deleteFrom('widget_visitors').where('public_id', '=', visitor.id).execute();
    const refused = await reply();
    expect(refused.statusCode, refused.body).toBe(422);
  });

  if (DIALECT === 'sqlite') {
    it('are read on every request on SQLite (one process reading in memory)', async () => {
      const w = await connectWidget(h, owner);
      const { token } = await start({ key: w.key });
      expect((await say(token, 'a')).statusCode).toBe(200);
      expect(h.services.widget.sessions.kept.size).toBe(0);
    });
  }

  if (DIALECT === 'postgres') {
    it('are kept after the first read: later reads make no statement, and a disabled widget refuses its kept sessions', async () => {
      const w = await connectWidget(h, owner);
      const { token, visitor } = await start({ key: w.key, name: 'Kept' });
      const { counter, statements } = statementCounter();
      const base = h.services.deps.db;
      const counted: Db = { ...base, kysely: base.kysely.withPlugin(counter) };
      const cache = new SessionCache(counted, new IntegrationCache(counted));
      expect((await cache.find(hashOf(token)))?.visitor).toMatchObject({ public_id: visitor.id, name: 'Kept' });
      expect(statements()).toBe(1);
      // The widget is read once more, from then on kept as well.
      expect((await cache.find(hashOf(token)))?.integration).toMatchObject({ id: w.id, status: 'active' });
      expect(statements()).toBe(2);
      const found = await cache.find(hashOf(token));
      expect(statements()).toBe(2);
      expect(cache.size).toBe(1);
      // Each caller has a copy of its own.
      found!.visitor.name = 'changed here';
      expect((await cache.find(hashOf(token)))?.visitor.name).toBe('Kept');
      expect(await cache.find(hashOf('wvt_unknown'))).toBeUndefined();

      await db().updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', w.id).execute();
      expect(await cache.find(hashOf(token))).toBeUndefined();
    });

    it("keeps visitors by widget and public id for employees' sends: later checks make no statement", async () => {
      const w = await connectWidget(h, owner);
      const { visitor } = await start({ key: w.key, name: 'Kept' });
      const { counter, statements } = statementCounter();
      const base = h.services.deps.db;
      const counted: Db = { ...base, kysely: base.kysely.withPlugin(counter) };
      const cache = new SessionCache(counted, new IntegrationCache(counted));
      const found = await cache.visitor(w.id, visitor.id);
      expect(found).toMatchObject({ public_id: visitor.id, name: 'Kept', integration_id: w.id });
      found!.name = 'changed here';
      expect(await cache.visitor(w.id, visitor.id)).toMatchObject({ name: 'Kept' });
      expect(statements()).toBe(1);
      expect(cache.publicIds).toBe(1);
      // Another widget's key, and a visitor that is not there: read every time, never kept.
      expect(await cache.visitor(w.id + 1, visitor.id)).toBeUndefined();
      expect(await cache.visitor(w.id, 'v_nobody')).toBeUndefined();
      expect(await cache.visitor(w.id, 'v_nobody')).toBeUndefined();
      expect(statements()).toBe(4);
      expect(cache.publicIds).toBe(1);
    });

    it('are read every time with PARLEY_PG_USER_CACHE=off (a pooler in transaction mode)', async () => {
      const w = await connectWidget(h, owner);
      const { token } = await start({ key: w.key });
      const unkept = await openDatabase({ databaseUrl: h.database.url, dataDir: '', poolSize: 1, rowChanges: false });
      try {
        const cache = new SessionCache(unkept, new IntegrationCache(unkept));
        expect((await cache.find(hashOf(token)))?.integration.id).toBe(w.id);
        expect(cache.size).toBe(0);
      } finally {
        await unkept.close();
      }
    });

    describe('with a second process on the same database', () => {
      let second: Db;
      let cache: SessionCache;
      beforeAll(async () => {
        ({ db: second } = await openSecondPool(h.database.url!, 'session-cache'));
        cache = new SessionCache(second, new IntegrationCache(second));
      });
      afterAll(() => second.close());
      const nextChange = () => nextRowChange(second, 'widget_visitors');

      it('forgets a visitor that the other process changed, and a session deleted there, as soon as it hears of it', async () => {
        const w = await connectWidget(h, owner);
        const { token, visitor } = await start({ key: w.key, name: 'Before' });
        const row = await db().selectFrom('widget_visitors').select('id').where('public_id', '=', visitor.id).executeTakeFirstOrThrow();
        expect((await cache.find(hashOf(token)))?.visitor.name).toBe('Before');
        expect((await cache.visitor(w.id, visitor.id))?.name).toBe('Before');

        const renamed = nextChange();
        await db().updateTable('widget_visitors').set({ name: 'After' }).where('id', '=', row.id).execute();
        expect(await renamed).toBe(row.id);
        expect((await cache.find(hashOf(token)))?.visitor.name).toBe('After');
        expect((await cache.visitor(w.id, visitor.id))?.name).toBe('After');

        const ended = nextChange();
        await db().deleteFrom('widget_sessions').where('token_hash', '=', hashOf(token)).execute();
        expect(await ended).toBe(row.id);
        expect(await cache.find(hashOf(token))).toBeUndefined();
      });

      it('hears a statement that deletes more than 100 visitors as one change of anything, and forgets every session', async () => {
        const w = await connectWidget(h, owner);
        const { token } = await start({ key: w.key });
        expect(await cache.find(hashOf(token))).toBeDefined();
        expect(cache.size).toBeGreaterThan(0);
        const now = h.clock.now();
        const bulk = await db()
          .insertInto('widget_visitors')
          .values(
            Array.from({ length: 101 }, (_, i) => ({
              account_id: owner.accountId,
              integration_id: w.id,
              public_id: `v_bulk_${i}`,
              identifier: null,
              name: '',
              email: '',
              phone: '',
              created_at: now,
              last_seen_at: now,
            })),
          )
          .returning('id')
          .execute();
        const heard = nextChange();
        await db()
          .deleteFrom('widget_visitors')
          .where(
            'id',
            'in',
            bulk.map((row) => row.id),
          )
          .execute();
        expect(await heard).toBeUndefined();
        expect(cache.size).toBe(0);
        // The session is read again (each of the pool's connections hears the change: when the
        // other one hears it during this read, the read keeps nothing).
        expect(await cache.find(hashOf(token))).toBeDefined();
      });

      it('keeps nothing from a read that a reported change overlapped', async () => {
        const w = await connectWidget(h, owner);
        const { token } = await start({ key: w.key });
        const before = cache.size;
        let read: Promise<unknown> | undefined;
        await db()
          .transaction()
          .execute(async (trx) => {
            await sql`lock table widget_sessions in access exclusive mode`.execute(trx);
            read = cache.find(hashOf(token));
            const heard = nextChange();
            await sql`select pg_notify('parley_widget_visitors', current_schema() || '.0')`.execute(db());
            expect(await heard).toBe(0);
          });
        expect(await read).toMatchObject({ integration: { id: w.id } });
        expect(cache.size).toBe(before);
        await cache.find(hashOf(token));
        expect(cache.size).toBe(before + 1);
      });
    });
  }
});
