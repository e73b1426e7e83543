import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { LeadSeeder, statusesOf, type SeededLead } from './helpers/leads-seed.js';
import { matchesFilters, visibleTo, type RefActor, type RefFilters } from './helpers/leads-reference.js';
import type { StatusRow } from '../src/db/schema.js';

/**
 * GET /v1.3/leads/statistics?amounts=true (docs/api/leads.md): the exact sums of the leads'
 * amounts per list and per status, the funnel board's column totals (the Inbox column is the
 * `inbox` list). Checked against the same sums computed here over the seeded leads, for the
 * owner and managers of every reach, with filters, columns far larger than a page, sums past 2^53
 * and past SQLite's 64-bit `sum()`, and another account's leads never counted.
 */

let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let statuses: StatusRow[];
let firstActive: StatusRow;
let failed: StatusRow;
const leads: SeededLead[] = [];
const otherLeads: SeededLead[] = [];
const integrations: Array<{ id: number; type: string }> = [];
let managers: Record<'own' | 'sources' | 'allowed', ManagerFixture>;
const actors: Record<string, { token: string; ref: RefActor }> = {};
const HUGE = Number.MAX_SAFE_INTEGER;

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`missing: ${what}`);
  return value;
}
const T0 = Date.UTC(2026, 2, 1);

/** Leads written in batches (the sums-past-64-bits case needs over a thousand): no messages, no tags. */
async function bulkLeads(
  accountId: number,
  integration: { id: number; type: string },
  customerId: number,
  status: StatusRow,
  n: number,
  amount: number,
  userId: number | null,
) {
  const db = h.database.db.kysely;
  for (let done = 0; done < n; done += 250) {
    const rows = Array.from({ length: Math.min(250, n - done) }, (_, i) => ({
      account_id: accountId,
      integration_id: integration.id,
      customer_id: customerId,
      user_id: userId,
      status_id: status.id,
      status_type: status.type,
      amount,
      last_message_at: T0 + done + i,
      created_at: T0 + done + i,
      updated_at: T0 + done + i,
    }));
    const ids = await db.insertInto('leads').values(rows).returning('id').execute();
    for (const [i, { id }] of ids.entries()) {
      const r = rows[i];
      leads.push({
        id,
        integrationId: integration.id,
        integrationType: integration.type,
        customerId,
        userId,
        statusId: status.id,
        statusType: status.type,
        unreadCount: 0,
        lastMessageAt: r.last_message_at,
        lastMessageIncoming: null,
        createdAt: r.created_at,
        responseTime: null,
        tags: [],
        amount,
        sourceTypes: [],
        messageCount: 0,
      });
    }
  }
}

beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
  owner = await h.signUp();
  other = await h.signUp();
  const seeder = new LeadSeeder(h, owner.accountId);
  for (const type of ['widget', 'social1_group']) integrations.push({ id: await createIntegration(h, owner.accountId, type), type });
  const [A, B] = integrations as [{ id: number; type: string }, { id: number; type: string }];
  const own = await createManager(h, owner);
  managers = {
    own,
    sources: await createManager(h, owner, { sources: [A.id], allowAllDeals: true }),
    allowed: await createManager(h, owner, { allowedUsers: [own.userId] }),
  };
  actors.owner = { token: owner.access, ref: { owner: true } };
  actors.own = { token: own.access, ref: { owner: false, self: own.userId, integrations: 'all', allowAllDeals: false, allowedUsers: [] } };
  actors.sources = {
    token: managers.sources.access,
    ref: { owner: false, self: managers.sources.userId, integrations: [A.id], allowAllDeals: true, allowedUsers: [] },
  };
  actors.allowed = {
    token: managers.allowed.access,
    ref: { owner: false, self: managers.allowed.userId, integrations: 'all', allowAllDeals: false, allowedUsers: [own.userId] },
  };

  statuses = await statusesOf(h, owner.accountId);
  firstActive = must(statuses.filter((s) => s.type === 'active').sort((a, b) => a.position - b.position)[0], 'active status');
  failed = must(
    statuses.find((s) => s.type === 'failed'),
    'failed status',
  );
  const customers: number[] = [];
  for (let i = 0; i < 6; i++) customers.push(await seeder.customer(`Customer ${i}`));

  // 140 Inbox leads and 130 in the first active status (each well over the board's page of 100),
  // 50 over the other statuses; amounts of either sign, employees of every reach, tags, unread ones.
  const users = [null, owner.userId, own.userId, managers.sources.userId, managers.allowed.userId];
  const spec = fc.record({
    integration: fc.nat(1),
    customer: fc.nat(5),
    user: fc.nat(users.length - 1),
    amount: fc.oneof(fc.integer({ min: -5_000, max: 250_000 }), fc.constant(0)),
    unread: fc.boolean(),
    vip: fc.boolean(),
  });
  const samples = fc.sample(spec, { seed: 20260323, numRuns: 320 });
  for (const [i, s] of samples.entries()) {
    const status = i < 140 ? null : i < 270 ? firstActive : statuses[i % statuses.length];
    leads.push(
      await seeder.lead({
        integration: integrations[s.integration],
        customerId: customers[s.customer],
        userId: users[s.user],
        status,
        createdAt: T0 + i * 1000,
        amount: s.amount,
        messages: [{ at: T0 + i * 1000, incoming: true, unread: s.unread }],
        tags: s.vip ? ['vip'] : [],
      }),
    );
  }
  // Sums past 2^53 (a JavaScript number would round them) in the Inbox and an active column...
  for (const status of [null, firstActive]) {
    for (let i = 0; i < 3; i++) {
      leads.push(await seeder.lead({ integration: B, customerId: customers[0], userId: own.userId, status, createdAt: T0, amount: HUGE }));
    }
  }
  // ...and past 2^63 (SQLite's integer sum() would fail with "integer overflow").
  await bulkLeads(owner.accountId, A, customers[1], failed, 1100, HUGE, owner.userId);

  // Account B: its own leads, large amounts, in its own Inbox and statuses; never counted for A.
  const otherSeeder = new LeadSeeder(h, other.accountId);
  const otherIntegration = { id: await createIntegration(h, other.accountId, 'widget'), type: 'widget' };
  const otherCustomer = await otherSeeder.customer('B customer');
  const otherStatuses = await statusesOf(h, other.accountId);
  for (const status of [null, ...otherStatuses]) {
    otherLeads.push(
      await otherSeeder.lead({ integration: otherIntegration, customerId: otherCustomer, status, createdAt: T0, amount: 777_777 }),
    );
  }
}, 120_000);
afterAll(() => h.close());

const sum = (ls: SeededLead[]) => String(ls.reduce((n, l) => n + BigInt(l.amount), 0n));

/** What the API must answer, computed plainly over the seeded leads (docs/api/auth.md visibility). */
function expected(actor: RefActor, f: RefFilters, all = leads, own = statuses) {
  const seen = all.filter((l) => visibleTo(actor, l) && matchesFilters(f, l));
  const of = (types: string[]) => seen.filter((l) => types.includes(l.statusType));
  return {
    amounts: {
      inbox: sum(of(['inbox'])),
      active: sum(of(['active'])),
      completed: sum(of(['completed', 'failed'])),
      all: sum(of(['inbox', 'active', 'completed', 'failed'])),
      ignore: sum(of(['ignore'])),
    },
    lists: {
      inbox: of(['inbox']).length,
      active: of(['active']).length,
      completed: of(['completed', 'failed']).length,
      all: of(['inbox', 'active', 'completed', 'failed']).length,
      ignore: of(['ignore']).length,
    },
    statuses: own.map((s) => {
      const ls = seen.filter((l) => l.statusId === s.id);
      return { id: s.id, count: ls.length, amount: sum(ls) };
    }),
  };
}

async function stats(token: string, params = '') {
  const res = await h.request({ method: 'GET', url: `/v1.3/leads/statistics?amounts=true${params}`, token });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  return {
    amounts: body.amounts,
    lists: body.lists,
    statuses: [...body.statuses]
      .sort((a, b) => a.id - b.id)
      .map((s: { id: number; count: number; amount: string }) => ({ id: s.id, count: s.count, amount: s.amount })),
  };
}

describe('lead amount sums per list and status (statistics?amounts=true)', () => {
  it('sum every lead of a column, far beyond a page, exactly past 2^53 and past 64 bits', async () => {
    const got = await stats(owner.access);
    expect(got).toEqual(expected({ owner: true }, {}));
    // The columns are larger than the board's page, which therefore cannot sum them itself.
    expect(got.lists.inbox).toBeGreaterThan(100);
    expect(
      must(
        got.statuses.find((s) => s.id === firstActive.id),
        'active column',
      ).count,
    ).toBeGreaterThan(100);
    const page = await h.request({ method: 'GET', url: '/v1.3/leads/inbox?limit=100', token: owner.access });
    const pageSum = String(page.json().reduce((n: bigint, l: { amount: number }) => n + BigInt(l.amount), 0n));
    expect(pageSum).not.toBe(got.amounts.inbox);
    // Past 2^53 in the Inbox; past 2^63 in the failed status (1100 leads of 2^53 - 1).
    expect(BigInt(got.amounts.inbox)).toBeGreaterThan(BigInt(Number.MAX_SAFE_INTEGER));
    const failedSum = must(
      got.statuses.find((s) => s.id === failed.id),
      'failed column',
    ).amount;
    expect(BigInt(failedSum)).toBe(1100n * BigInt(HUGE) + BigInt(sum(leads.filter((l) => l.statusId === failed.id && l.amount !== HUGE))));
    expect(BigInt(failedSum)).toBeGreaterThan(2n ** 63n);
  });

  it('a manager sums only the leads it sees: its own and the unassigned Inbox, its allowed colleagues, its channels', async () => {
    for (const who of ['own', 'allowed', 'sources']) {
      const { token, ref } = actors[who];
      const got = await stats(token);
      expect(got, who).toEqual(expected(ref, {}));
      expect(got.amounts.all, who).not.toBe(expected({ owner: true }, {}).amounts.all);
    }
  });

  it('applies the list filters to the sums', async () => {
    const A = must(integrations[0], 'integration');
    const cases: Array<[string, RefFilters]> = [
      [`&sa=${A.id}`, { sa: [A.id] }],
      ['&types=social1_group', { types: ['social1_group'] }],
      ['&tags=vip', { tags: ['vip'] }],
      [`&users=${managers.own.userId},${owner.userId}`, { users: [managers.own.userId, owner.userId] }],
      ['&unread=unread', { unread: 'unread' }],
      [`&statuses=${firstActive.id}`, { statuses: [firstActive.id] }],
    ];
    for (const [params, f] of cases) {
      for (const who of ['owner', 'own']) {
        const { token, ref } = actors[who];
        expect(await stats(token, params), `${who} ${params}`).toEqual(expected(ref, f));
      }
    }
  });

  it("never counts another account's leads, either way", async () => {
    const mine = await stats(owner.access);
    expect(mine.statuses.map((s) => s.id).sort()).toEqual(statuses.map((s) => s.id).sort());
    const theirs = await stats(other.access);
    const otherStatuses = await statusesOf(h, other.accountId);
    expect(theirs).toEqual(expected({ owner: true }, {}, otherLeads, otherStatuses));
    expect(theirs.amounts.inbox).toBe('777777');
    // Filtering A's statistics by B's integration or status finds nothing of B's.
    const foreign = await stats(owner.access, `&sa=${otherLeads[0].integrationId}`);
    expect(foreign.amounts.all).toBe('0');
    expect(foreign.lists.all).toBe(0);
  });

  it('answers sums only when asked; a bad value is 400', async () => {
    const plain = (await h.request({ method: 'GET', url: '/v1.3/leads/statistics', token: owner.access })).json();
    expect(plain.amounts).toBeUndefined();
    expect(plain.statuses.every((s: object) => !('amount' in s))).toBe(true);
    const bad = await h.request({ method: 'GET', url: '/v1.3/leads/statistics?amounts=maybe', token: owner.access });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'validation_failed', details: [{ path: 'querystring.amounts' }] });
  });

  it('follows a lead moved between columns and a changed amount', async () => {
    const lead = must(
      leads.find((l) => l.statusType === 'inbox' && l.userId === owner.userId && l.amount > 0),
      'an Inbox lead',
    );
    const before = await stats(owner.access);
    const moved = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${lead.id}`,
      token: owner.access,
      payload: { statusId: firstActive.id, amount: lead.amount + 5 },
    });
    expect(moved.statusCode, moved.body).toBe(200);
    const after = await stats(owner.access);
    expect(BigInt(after.amounts.inbox)).toBe(BigInt(before.amounts.inbox) - BigInt(lead.amount));
    const col = (s: typeof before, id: number) =>
      must(
        s.statuses.find((x) => x.id === id),
        `status ${id}`,
      );
    expect(BigInt(col(after, firstActive.id).amount)).toBe(BigInt(col(before, firstActive.id).amount) + BigInt(lead.amount + 5));
    expect(col(after, firstActive.id).count).toBe(col(before, firstActive.id).count + 1);
    expect(after.lists.inbox).toBe(before.lists.inbox - 1);
    Object.assign(lead, { statusId: firstActive.id, statusType: 'active', amount: lead.amount + 5 });
    expect(after).toEqual(expected({ owner: true }, {}));
  });
});
