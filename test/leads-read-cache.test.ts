import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../src/db/database.js';
import { LeadsService } from '../src/domain/leads/leads.service.js';
import { parseLeadQuery } from '../src/domain/leads/lead-filters.js';
import { LeadReadCache } from '../src/domain/leads/read-cache.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { DIALECT } from './helpers/database.js';
import { createIntegration, createLead } from './helpers/fixtures.js';

/**
 * The read cache of lead lists (read-cache.ts) on both dialects: an answer is reused only while
 * nothing was committed, by this process or any other (a second connection to the same database
 * stands for another Parley process).
 */

let h: Harness;
let owner: SignedUp;
let integration: number;
/** Another connection to the same database: SQLite file or PostgreSQL schema. */
let other: Db;

beforeAll(async () => {
  h = await createHarness({ sqliteFile: true });
  owner = await h.signUp();
  integration = await createIntegration(h, owner.accountId);
  other =
    DIALECT === 'postgres'
      ? await openDatabase({ databaseUrl: h.database.url, dataDir: '', poolSize: 1 })
      : await openDatabase({ dataDir: h.dataDir, sqliteFile: 'parley.db' });
});
afterAll(async () => {
  await other.close();
  await h.close();
});

const inbox = async () => {
  const res = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: owner.access });
  expect(res.statusCode).toBe(200);
  return { total: res.headers['x-total-count'], details: res.json().map((l: { details: string }) => l.details) };
};

describe('lead read cache', () => {
  it('remembers per version: reuses while the version holds, recomputes when it moved', async () => {
    const cache = new LeadReadCache(DIALECT);
    const db = h.database.db.kysely;
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    const first = await cache.viewAt('v1', db).get('k', compute);
    expect(await cache.viewAt('v1', db).get('k', compute)).toBe(first);
    expect(computed).toBe(1);
    expect(await cache.viewAt('v2', db).get('k', compute)).toEqual({ n: 2 });
    // A value computed for a version that another read has moved past is not remembered.
    const stale = cache.viewAt('v2', db);
    cache.viewAt('v3', db);
    await stale.get('k', compute);
    expect(await cache.viewAt('v3', db).get('k', compute)).toEqual({ n: 4 });
  });

  it('pages and totals follow commits of another process, and ignore its rolled-back writes', async () => {
    expect(await inbox()).toEqual({ total: '0', details: [] });
    const { leadId } = await createLead(h, owner.accountId, integration);
    expect(await inbox()).toEqual({ total: '1', details: [''] });
    expect(await inbox()).toEqual({ total: '1', details: [''] });
    await other.kysely.updateTable('leads').set({ details: 'from elsewhere' }).where('id', '=', leadId).execute();
    expect(await inbox()).toEqual({ total: '1', details: ['from elsewhere'] });
    await other.kysely
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable('leads').set({ details: 'never' }).where('id', '=', leadId).execute();
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await inbox()).toEqual({ total: '1', details: ['from elsewhere'] });
    await other.kysely.updateTable('leads').set({ status_type: 'active' }).where('id', '=', leadId).execute();
    expect(await inbox()).toEqual({ total: '0', details: [] });
  });

  it('funnel pages follow commits of another process', async () => {
    const db = h.database.db.kysely;
    const active = await db.selectFrom('statuses').select('id').where('account_id', '=', owner.accountId).where('type', '=', 'active').executeTakeFirstOrThrow();
    const funnel = async () => {
      const res = await h.request({ method: 'GET', url: '/v1.3/leads/funnel', token: owner.access });
      expect(res.statusCode).toBe(200);
      const column = res.json().find((c: { id: number }) => c.id === active.id);
      return { total: res.headers['x-total-count'], details: column.leads.map((l: { details: string }) => l.details) };
    };
    const before = await funnel();
    expect(await funnel()).toEqual(before);
    const { leadId } = await createLead(h, owner.accountId, integration);
    await other.kysely.updateTable('leads').set({ status_id: active.id, status_type: 'active', details: 'moved elsewhere' }).where('id', '=', leadId).execute();
    const after = await funnel();
    expect(after.total).toBe(String(Number(before.total) + 1));
    expect(after.details).toContain('moved elsewhere');
  });

  it('answers a repeated page and total with the version probe alone while nothing was committed', async () => {
    await createLead(h, owner.accountId, integration);
    let queries = 0;
    const versions: string[] = [];
    const counting = h.database.db.kysely.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        queries++;
        const row = args.result.rows[0] as { v?: unknown } | undefined;
        if (args.result.rows.length === 1 && typeof row?.v === 'string') versions.push(row.v);
        return args.result;
      },
    });
    const service = new LeadsService({ ...h.services.deps, db: { ...h.database.db, kysely: counting } });
    const user = await h.database.db.kysely.selectFrom('users').selectAll().where('id', '=', owner.userId).executeTakeFirstOrThrow();
    const auth = { accountId: owner.accountId, userId: owner.userId, role: 'owner' as const, typ: 'access' as const, user };
    const query = parseLeadQuery({}, { list: 'all', extended: true, clampLimit: false });
    const first = await service.list(auth, 'all', query);
    const full = queries;
    queries = 0;
    const again = await service.list(auth, 'all', query);
    expect(again).toEqual(first);
    // On PostgreSQL the version is the server's snapshot: a commit by any client of the server (the
    // other test files) moves it, and then the page is read again (in a transaction of its own,
    // after the probe that found the snapshot moved), as it must be.
    if (versions[0] === versions[1]) {
      expect(versions).toHaveLength(2);
      expect(queries).toBe(1);
    } else {
      expect(DIALECT).toBe('postgres');
      expect(queries).toBe(full + 1);
    }
  });
});
