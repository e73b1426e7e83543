import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql, type SqlBool } from 'kysely';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { DIALECT, withLaterColumns } from './helpers/database.js';
import { recordedTexts } from './helpers/statements.js';
import { MIGRATION_NAMES, migrateToLatest } from '../src/db/migrate.js';
import { MANY_CUSTOMER_MATCHES } from '../src/domain/search/search.service.js';
import { customerLeadIds, customerLeadsWalking } from '../src/domain/search/search.repo.js';
import { searchIndexFor } from '../src/domain/search/search-index.js';
import { queryTerms } from '../src/domain/search/query-terms.js';
import { fts5AnyQuery, tsAnyQuery } from '../src/domain/search/query-terms.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import type { IntegrationRow } from '../src/db/schema.js';

/**
 * Migration 0015 made SQLite's search tables anew with prefix indexes, filled from the messages and
 * customers already stored. An install with data must find what it found before (and by prefixes
 * of any length), and the recreated triggers must keep both indexes current. PostgreSQL has nothing
 * to migrate and must answer the same.
 */
describe('search across migration 0015 (prefix indexes)', () => {
  let h: Harness;
  let owner: Pick<SignedUp, 'access' | 'accountId'>;
  let integration: IntegrationRow;
  const ids = new Map<string, number>();
  const leads = new Map<string, number>();

  const TEXTS: Record<string, { from: string; name: string; text: string }> = {
    a: { from: 'olga', name: 'Olga Petrenko', text: 'Where is my order 1001?' },
    b: { from: 'olga', name: 'Olga Petrenko', text: 'Thanks, the parcel arrived' },
    c: { from: 'pavlo', name: 'Pavlo Ordynsky', text: 'Ordering a warranty extension' },
  };
  const msg = (key: string, text = TEXTS[key].text): IncomingMessage => ({
    externalId: `ext-${key}`,
    datetime: h.clock.now(),
    sender: { socialId: TEXTS[key]?.from ?? key, name: TEXTS[key]?.name ?? key },
    channel: { externalId: `chat-${TEXTS[key]?.from ?? key}`, type: 'message' },
    text,
  });

  beforeAll(async () => {
    const before = MIGRATION_NAMES[MIGRATION_NAMES.indexOf('0015-search-prefixes') - 1];
    h = await createHarness({ migrateTo: before });
    // The account is made by the service, not the API: today's sign-up answers tokens that need
    // columns of later migrations. Its owner signs in once the schema is current.
    const login = 'prefix-owner@example.com';
    const pass = 'correct horse battery';
    const user = await h.services.accounts.createWithOwner({ login, pass, name: 'Owner' });
    const id = await createIntegration(h, user.account_id, 'msgrb_bot');
    integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    await withLaterColumns(h.database.db.kysely, async () => {
      for (const key of Object.keys(TEXTS)) {
        h.clock.advance(1000);
        const r = await h.services.ingest.ingest(integration, msg(key));
        ids.set(key, r.messageId);
        leads.set(key, r.leadId);
      }
    });
    const olga = await h.database.db.kysely
      .selectFrom('leads')
      .select('customer_id')
      .where('id', '=', leads.get('a')!)
      .executeTakeFirstOrThrow();
    await h.database.db.kysely
      .updateTable('customers')
      .set({ phone: '+380 (67) 123-45-67', email: 'olga@post.example' })
      .where('id', '=', olga.customer_id)
      .execute();
    await migrateToLatest(h.database.db);
    const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login, pass } });
    expect(res.statusCode).toBe(200);
    const tokens = res.json();
    owner = { access: tokens.accessToken.token, accountId: user.account_id };
  });
  afterAll(() => h.close());

  const messages = async (q: string) => {
    const res = await h.request({ method: 'POST', url: `/v1.3/search/${integration.id}`, payload: { q }, token: owner.access });
    expect(res.statusCode).toBe(200);
    return res.json().messages.map((m: { externalId: number }) => m.externalId);
  };
  const customers = async (q: string) => {
    const res = await h.request({ method: 'POST', url: '/v1.3/search/customers', payload: { q }, token: owner.access });
    expect(res.statusCode).toBe(200);
    return res.json().leads.map((l: { customer: { name: string } }) => l.customer.name);
  };

  it('finds the messages stored before it, by prefixes of every length', async () => {
    const [a, b, c] = ['a', 'b', 'c'].map((k) => ids.get(k));
    expect(await messages('o')).toEqual([c, a]);
    expect(await messages('or')).toEqual([c, a]);
    expect(await messages('order')).toEqual([c, a]);
    expect(await messages('orderin')).toEqual([c]);
    // The word as written, then another form of it ("order": migration 0105's stems).
    expect(await messages('ordering')).toEqual([c, a]);
    expect(await messages('warranty extension')).toEqual([c]);
    expect(await messages('10')).toEqual([a]);
    expect(await messages('parcel thanks')).toEqual([b]);
    expect(await messages('ordinals')).toEqual([]);
  });

  it('finds the customers stored before it, by name, e-mail and phone', async () => {
    expect(await customers('o')).toEqual(['Pavlo Ordynsky', 'Olga Petrenko']);
    expect(await customers('petr')).toEqual(['Olga Petrenko']);
    expect(await customers('post.example')).toEqual(['Olga Petrenko']);
    expect(await customers('(067) 123-45-67')).toEqual(['Olga Petrenko']);
    expect(await customers('+380671234567')).toEqual(['Olga Petrenko']);
    expect(await customers('38067')).toEqual(['Olga Petrenko']);
  });

  it('keeps indexing messages written after it: new, changed and deleted', async () => {
    h.clock.advance(1000);
    const fresh = await h.services.ingest.ingest(integration, msg('d', 'Optional gift wrapping'));
    expect(await messages('o')).toEqual([fresh.messageId, ids.get('c'), ids.get('a')]);
    await h.database.db.kysely.updateTable('messages').set({ text: 'Gift wrapping please' }).where('id', '=', fresh.messageId).execute();
    expect(await messages('optional')).toEqual([]);
    expect(await messages('plea')).toEqual([fresh.messageId]);
    await h.database.db.kysely.deleteFrom('messages').where('id', '=', fresh.messageId).execute();
    expect(await messages('gift')).toEqual([]);
  });

  it('keeps indexing customers changed after it', async () => {
    const row = await h.database.db.kysely
      .selectFrom('leads')
      .select('customer_id')
      .where('id', '=', leads.get('c')!)
      .executeTakeFirstOrThrow();
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/customers/${row.customer_id}`,
      token: owner.access,
      payload: { name: 'Petro Kvitka' },
    });
    expect(res.statusCode).toBe(200);
    expect(await customers('kvit')).toEqual(['Petro Kvitka']);
    expect(await customers('ordyn')).toEqual([]);
    expect(await customers('p')).toEqual(['Petro Kvitka', 'Olga Petrenko']);
  });

  it('made the SQLite tables with prefix indexes, consistent with their sources (PostgreSQL: left as it was)', async () => {
    const db = h.database.db.kysely;
    if (DIALECT === 'postgres') {
      // Prefix terms are answered by GIN indexes: of the customers' words copied to each lead (0070,
      // which replaced the customers' own index of 0010) and of each message's words (0071, which
      // replaced the messages' own); 0015 changes nothing there.
      const { rows } = await sql<{ indexname: string }>`select indexname from pg_indexes
        where schemaname = current_schema() and indexname like '%search_idx' order by indexname`.execute(db);
      expect(rows.map((r) => r.indexname)).toEqual(['lead_words_search_idx', 'message_words_search_idx']);
      return;
    }
    const { rows } = await sql<{
      name: string;
      sql: string;
    }>`select name, sql from sqlite_master where name in ('messages_fts', 'customers_fts')`.execute(db);
    expect(rows).toHaveLength(2);
    for (const r of rows) expect(r.sql).toContain("prefix='1 2 3 4 5 6 7 8'");
    // FTS5 compares the index (prefix indexes included) with the content table; it throws on a mismatch.
    await sql`insert into messages_fts(messages_fts, rank) values ('integrity-check', 1)`.execute(db);
    await sql`insert into customers_fts(customers_fts) values ('integrity-check')`.execute(db);
    const { rows: triggers } = await sql<{
      name: string;
    }>`select name from sqlite_master where type = 'trigger' and name like '%fts%' order by name`.execute(db);
    expect(triggers.map((t) => t.name)).toEqual([
      'customers_fts_ad',
      'customers_fts_ai',
      'customers_fts_au',
      'messages_fts_ad',
      'messages_fts_ai',
      'messages_fts_au',
    ]);
  });
});

/**
 * Customer search when the words match many customers of the account (SQLite then walks the leads
 * newest first instead of joining every match to its leads): the same pages, the same account
 * isolation and lead visibility as the other plan.
 */
describe('customer search with many matching customers', () => {
  let h: Harness;
  let owner: SignedUp;
  let other: SignedUp;
  const expected: number[] = [];
  const ownersLeads = new Set<number>();

  beforeAll(async () => {
    h = await createHarness();
    owner = await h.signUp();
    other = await h.signUp();
    const mine = await createIntegration(h, owner.accountId, 'msgrb_bot');
    const theirs = await createIntegration(h, other.accountId, 'msgrb_bot');
    for (let i = 0; i < MANY_CUSTOMER_MATCHES + 30; i++) {
      // Every third lead is the owner's, out of a manager's sight; some customers of another
      // account match the same words.
      const assigned = i % 3 === 0;
      const lead = await createLead(h, owner.accountId, mine, {
        customerName: `Walker Number${i}`,
        ...(assigned ? { userId: owner.userId, statusType: 'active' as const } : {}),
      });
      expected.unshift(lead.leadId);
      if (assigned) ownersLeads.add(lead.leadId);
      if (i % 50 === 0) await createLead(h, other.accountId, theirs, { customerName: `Walker Elsewhere${i}` });
      if (i % 100 === 0) await createLead(h, owner.accountId, mine, { customerName: `Stroller ${i}` });
    }
  }, 60_000);
  afterAll(() => h.close());

  const pages = async (q: string, token: string) => {
    const seen: number[] = [];
    let cursor: number | undefined;
    for (let page = 0; page < 100; page++) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/search/customers',
        payload: cursor === undefined ? { q } : { q, cursor },
        token,
      });
      expect(res.statusCode).toBe(200);
      const got = res.json().leads.map((l: { id: number }) => l.id);
      expect(got.length).toBeLessThanOrEqual(20);
      seen.push(...got);
      cursor = res.json().cursor;
      if (cursor === -1) break;
    }
    return seen;
  };

  it('pages through every match newest first, with no duplicates or gaps', async () => {
    expect(await pages('walker', owner.access)).toEqual(expected);
  });

  it("never finds another account's customers", async () => {
    const theirs = await pages('walker', other.access);
    expect(theirs).toHaveLength(Math.ceil((MANY_CUSTOMER_MATCHES + 30) / 50));
    expect(theirs.filter((id) => expected.includes(id))).toEqual([]);
  });

  it('shows a manager only the leads it can see', async () => {
    const manager = await createManager(h, owner);
    expect(await pages('walker', manager.access)).toEqual(expected.filter((id) => !ownersLeads.has(id)));
  });

  // PostgreSQL's plan (SQLite answers in one step); the reference joins leads to their customers'
  // own words, so it also checks the copies in lead_words (migration 0070).
  if (DIALECT === 'postgres') {
    it('answers the same in two steps (PostgreSQL: the newest leads first, then the older matches), page by page, in one statement', async () => {
      const db = h.database.db.kysely;
      const index = searchIndexFor(DIALECT);
      const all = async (read: (beforeId: number | undefined) => Promise<number[]>) => {
        const out: number[][] = [];
        let beforeId: number | undefined;
        for (;;) {
          const got = await read(beforeId);
          out.push(got);
          if (got.length < 21) return out;
          beforeId = got[got.length - 1];
        }
      };
      const counts: Record<string, number> = { walker: MANY_CUSTOMER_MATCHES + 30, 'walker number12': 11, stroller: 6, 'nobody here': 0 };
      // Without a visibility rule (a kept statement), and with one that hides every third lead.
      for (const rule of [null, sql<SqlBool>`leads.id % 3 <> 0`]) {
        for (const q of ['walker', 'walker number12', 'stroller', 'nobody here']) {
          const query = (beforeId: number | undefined) => ({
            accountId: owner.accountId,
            alternatives: [queryTerms(q)],
            beforeId,
            limit: 21,
            rule,
          });
          const expected = await all((beforeId) => customerLeadIds(db, index, 'join', query(beforeId)));
          const count = counts[q];
          // The rule hides some of every query's matches but `nobody here`'s (none).
          if (rule && count) expect(expected.flat().length).toBeLessThan(count);
          else expect(expected.flat().length).toBe(count);
          for (const window of [1, 7, 50, 5000]) {
            const ids = async (beforeId: number | undefined) =>
              (await customerLeadsWalking(db, index, query(beforeId), window)).map((e) => e.lead.id);
            expect(await all(ids)).toEqual(expected);
          }
        }
      }
      // A page the window leaves short (`walker number12`: 11 matches among many walkers) is still one statement.
      const short = { accountId: owner.accountId, alternatives: [queryTerms('walker number12')], limit: 21, rule: null };
      expect(await recordedTexts(db, (recorder) => customerLeadsWalking(recorder, index, short, 7))).toHaveLength(1);
    });
  }

  it('narrows by a second word (few matches: the plan driven by the matches)', async () => {
    // Number12 and Number120-129, newest first; `expected` holds lead i at index length - 1 - i.
    const numbers = [129, 128, 127, 126, 125, 124, 123, 122, 121, 120, 12];
    expect(await pages('walker number12', owner.access)).toEqual(numbers.map((i) => expected[expected.length - 1 - i]));
  });
});

describe('query text of several alternatives', () => {
  it('is one FTS5 query and one tsquery', () => {
    expect(fts5AnyQuery([['ann']])).toBe('"ann"*');
    expect(fts5AnyQuery([['1', '555', '010'], ['1555010']])).toBe('("1"* "555"* "010"*) OR ("1555010"*)');
    expect(tsAnyQuery([['ann', 'lee']])).toBe('ann:* & lee:*');
    expect(tsAnyQuery([['1', '555'], ['1555010']])).toBe('(1:* & 555:*) | (1555010:*)');
  });
});
