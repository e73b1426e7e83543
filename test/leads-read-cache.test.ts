import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../src/db/database.js';
import { foldEndedReadVersions, leadReadVersion } from '../src/domain/leads/leads.repo.js';
import { LeadsService } from '../src/domain/leads/leads.service.js';
import { parseLeadQuery } from '../src/domain/leads/lead-filters.js';
import { LeadReadCache } from '../src/domain/leads/read-cache.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { DIALECT } from './helpers/database.js';
import { createIntegration, createLead } from './helpers/fixtures.js';

/**
 * The read cache of lead lists (read-cache.ts) on both dialects: an answer is reused only while
 * nothing of its account was committed, by this process or any other (a second connection to the
 * same database stands for another Parley process), and writes to other accounts leave it alone.
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
  it('remembers per account and version: reuses while the version holds, recomputes when it moved', async () => {
    const cache = new LeadReadCache(DIALECT);
    const db = h.database.db.kysely;
    let computed = 0;
    const compute = async () => ({ n: ++computed });
    const first = await cache.viewAt(1, 1, db).get('k', compute);
    expect(await cache.viewAt(1, 1, db).get('k', compute)).toBe(first);
    expect(computed).toBe(1);
    // The same key of another account is another answer.
    expect(await cache.viewAt(2, 1, db).get('k', compute)).toEqual({ n: 2 });
    expect(await cache.viewAt(1, 1, db).get('k', compute)).toBe(first);
    expect(await cache.viewAt(1, 2, db).get('k', compute)).toEqual({ n: 3 });
    // A value computed for a version older than one already remembered does not replace it.
    const stale = cache.viewAt(1, 2, db);
    await cache.viewAt(1, 3, db).get('k', compute);
    await stale.get('j', compute);
    await cache.viewAt(1, 2, db).get('k', compute);
    expect(await cache.viewAt(1, 3, db).get('k', compute)).toEqual({ n: 4 });
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
    const active = await db
      .selectFrom('statuses')
      .select('id')
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'active')
      .executeTakeFirstOrThrow();
    const funnel = async () => {
      const res = await h.request({ method: 'GET', url: '/v1.3/leads/funnel', token: owner.access });
      expect(res.statusCode).toBe(200);
      const column = res.json().find((c: { id: number }) => c.id === active.id);
      return { total: res.headers['x-total-count'], details: column.leads.map((l: { details: string }) => l.details) };
    };
    const before = await funnel();
    expect(await funnel()).toEqual(before);
    const { leadId } = await createLead(h, owner.accountId, integration);
    await other.kysely
      .updateTable('leads')
      .set({ status_id: active.id, status_type: 'active', details: 'moved elsewhere' })
      .where('id', '=', leadId)
      .execute();
    const after = await funnel();
    expect(after.total).toBe(String(Number(before.total) + 1));
    expect(after.details).toContain('moved elsewhere');
  });

  it('answers a repeated page and total with the version probe alone while nothing of the account was committed', async () => {
    await createLead(h, owner.accountId, integration);
    const lists = countingLists(owner);
    const first = await lists.list();
    expect(lists.queries()).toBeGreaterThan(1);
    expect(await lists.list()).toEqual(first);
    expect(lists.queries()).toBe(1);
  });

  it('moves the version on every insert, update and delete of what lists read, of one row or many, and only for the account written', async () => {
    const mine = await h.signUp();
    const stranger = await h.signUp();
    const db = h.database.db.kysely;
    const now = h.clock.now();
    const version = () => leadReadVersion(db, mine.accountId);
    const theirs = () => leadReadVersion(db, stranger.accountId);
    /** Runs a write and answers whether the account's version moved (the stranger's never does). */
    const moves = async (write: () => Promise<unknown>) => {
      const [v, w] = [await version(), await theirs()];
      await write();
      expect(await theirs()).toBe(w);
      return (await version()) !== v;
    };
    const integrationId = await createIntegration(h, mine.accountId);
    const lead = await createLead(h, mine.accountId, integrationId);
    const row = await db.selectFrom('leads').select(['customer_id']).where('id', '=', lead.leadId).executeTakeFirstOrThrow();
    const source = await db.selectFrom('sources').select('id').where('customer_id', '=', row.customer_id).executeTakeFirstOrThrow();
    const message = {
      account_id: mine.accountId,
      lead_id: lead.leadId,
      source_id: source.id,
      integration_id: integrationId,
      incoming: 1,
      created_at: now,
    };
    const tag = (name: string) => ({ account_id: mine.accountId, tag: name, tag_key: name, created_at: now });
    const [t1, t2] = await db
      .insertInto('tags')
      .values([tag('t1'), tag('t2')])
      .returning('id')
      .execute();

    // Inserts, one row and several in one statement.
    expect(
      await moves(() =>
        db
          .insertInto('messages')
          .values({ ...message, external_id: 'rv-1' })
          .execute(),
      ),
    ).toBe(true);
    expect(
      await moves(() =>
        db
          .insertInto('messages')
          .values([
            { ...message, external_id: 'rv-2' },
            { ...message, external_id: 'rv-3' },
          ])
          .execute(),
      ),
    ).toBe(true);
    expect(await moves(() => db.insertInto('tags').values(tag('t3')).execute())).toBe(true);
    const laneTag = (tagId: number) => ({ account_id: mine.accountId, lead_id: lead.leadId, tag_id: tagId, created_at: now });
    expect(
      await moves(() =>
        db
          .insertInto('lead_tags')
          .values([laneTag(t1.id), laneTag(t2.id)])
          .execute(),
      ),
    ).toBe(true);
    // Updates of every table a list reads.
    const byAccount = {
      leads: 'leads',
      customers: 'customers',
      integrations: 'integrations',
      messages: 'messages',
      lead_tags: 'lead_tags',
      tags: 'tags',
      sources: 'sources',
    } as const;
    for (const table of Object.values(byAccount)) {
      expect(
        await moves(() => db.updateTable(table).set({ account_id: mine.accountId }).where('account_id', '=', mine.accountId).execute()),
      ).toBe(true);
    }
    // A statement that changes no row changes nothing.
    expect(await moves(() => db.updateTable('leads').set({ details: 'x' }).where('id', '=', -1).execute())).toBe(false);
    // Deletes.
    expect(await moves(() => db.deleteFrom('lead_tags').where('lead_id', '=', lead.leadId).execute())).toBe(true);
    expect(await moves(() => db.deleteFrom('messages').where('external_id', 'in', ['rv-1', 'rv-2']).execute())).toBe(true);
    expect(await moves(() => db.deleteFrom('tags').where('id', '=', t1.id).execute())).toBe(true);
  });

  it('keeps answers through writes to another account, in this process and another one, and drops them on a write to the account', async () => {
    const stranger = await h.signUp();
    const strangerIntegration = await createIntegration(h, stranger.accountId);
    const lists = countingLists(owner);
    const first = await lists.list();
    // Another account's writes: through the API of this process, and through another connection.
    const theirs = await createLead(h, stranger.accountId, strangerIntegration);
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${theirs.leadId}`,
      token: stranger.access,
      body: { details: 'theirs' },
    });
    expect(res.statusCode).toBe(200);
    await other.kysely.updateTable('leads').set({ details: 'theirs, elsewhere' }).where('id', '=', theirs.leadId).execute();
    await other.kysely.updateTable('customers').set({ name: 'Someone else' }).where('account_id', '=', stranger.accountId).execute();
    expect(await lists.list()).toEqual(first);
    expect(lists.queries()).toBe(1);
    // A write to the account through another connection (another process): read again, and seen.
    const [entry] = first.entries;
    if (!entry) throw new Error('the account has leads');
    const mine = entry.lead.id;
    await other.kysely.updateTable('customers').set({ name: 'Renamed elsewhere' }).where('id', '=', entry.customer.id).execute();
    const renamed = await lists.list();
    expect(lists.queries()).toBeGreaterThan(1);
    expect(renamed.entries.find((e) => e.lead.id === mine)?.customer.name).toBe('Renamed elsewhere');
    expect(await lists.list()).toEqual(renamed);
    expect(lists.queries()).toBe(1);
    // And through this process's API: a new tag on the lead.
    const tagged = await h.request({ method: 'POST', url: `/v1.3/tags/${mine}/vip`, token: owner.access });
    expect(tagged.statusCode).toBeLessThan(300);
    const after = await lists.list();
    expect(after.entries.find((e) => e.lead.id === mine)?.tags).toEqual(['vip']);
  });

  it("folds the version rows of ended connections without changing any account's version", async () => {
    const db = h.database.db.kysely;
    const version = () => leadReadVersion(db, owner.accountId);
    const before = await version();
    expect(before).toBeGreaterThan(0);
    // A row of a backend that ended (no live process has this pid).
    if (DIALECT === 'postgres')
      await db.insertInto('lead_read_versions').values({ account_id: owner.accountId, backend: 0x7ffffffe, version: 5 }).execute();
    const withEnded = await version();
    expect(await foldEndedReadVersions(db, DIALECT)).toBe(DIALECT === 'postgres' ? 1 : 0);
    expect(await version()).toBe(withEnded);
    const rows = await db.selectFrom('lead_read_versions').select('backend').where('account_id', '=', owner.accountId).execute();
    expect(rows.map((r) => r.backend)).not.toContain(0x7ffffffe);
  });
});

/** The `all` list of `who` through a LeadsService of its own that counts its statements. */
function countingLists(who: SignedUp) {
  let queries = 0;
  const counting = h.database.db.kysely.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      queries++;
      return args.result;
    },
  });
  const service = new LeadsService({ ...h.services.deps, db: { ...h.database.db, kysely: counting } });
  const query = parseLeadQuery({}, { list: 'all', extended: true, clampLimit: false });
  return {
    /** Statements run since the last call. */
    queries: () => {
      const n = queries;
      queries = 0;
      return n;
    },
    list: async () => {
      const user = await h.database.db.kysely.selectFrom('users').selectAll().where('id', '=', who.userId).executeTakeFirstOrThrow();
      const auth = { accountId: who.accountId, userId: who.userId, role: 'owner' as const, typ: 'access' as const, user };
      queries = 0;
      return service.list(auth, 'all', query);
    },
  };
}
