import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { LeadSeeder, listOrder, statusesOf, type SeededLead } from './helpers/leads-seed.js';
import { referenceList, visibleTo, type ListName, type RefActor, type RefFilters } from './helpers/leads-reference.js';
import type { StatusRow } from '../src/db/schema.js';
import { LeadsService } from '../src/domain/leads/leads.service.js';
import { parseLeadQuery, repeatedParam } from '../src/domain/leads/lead-filters.js';

let h: Harness;
let owner: SignedUp;
let seeder: LeadSeeder;
let statuses: StatusRow[];
const leads: SeededLead[] = [];
const integrations: Array<{ id: number; type: string }> = [];
const customers: number[] = [];
const TAGS = ['vip', 'Vip', 'wholesale', 'new year', 'b2b'];
const T0 = Date.UTC(2026, 1, 1);
const MIN = 60_000;

interface Actor {
  token: string;
  ref: RefActor;
}
const actors: Actor[] = [];
let managers: Record<'sources' | 'all' | 'none' | 'allowed', ManagerFixture>;

beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
  owner = await h.signUp();
  seeder = new LeadSeeder(h, owner.accountId);
  for (const type of ['widget', 'social1_group', 'msgrb_personal'])
    integrations.push({ id: await createIntegration(h, owner.accountId, type), type });
  const [A, B] = integrations;
  const all = await createManager(h, owner, { allowAllDeals: true });
  managers = {
    all,
    sources: await createManager(h, owner, { sources: [A.id, B.id] }),
    none: await createManager(h, owner, { sources: [null] }),
    allowed: await createManager(h, owner, { allowedUsers: [all.userId] }),
  };
  actors.push(
    { token: owner.access, ref: { owner: true } },
    {
      token: managers.sources.access,
      ref: { owner: false, self: managers.sources.userId, integrations: [A.id, B.id], allowAllDeals: false, allowedUsers: [] },
    },
    {
      token: managers.all.access,
      ref: { owner: false, self: managers.all.userId, integrations: 'all', allowAllDeals: true, allowedUsers: [] },
    },
    {
      token: managers.none.access,
      ref: { owner: false, self: managers.none.userId, integrations: [], allowAllDeals: false, allowedUsers: [] },
    },
    {
      token: managers.allowed.access,
      ref: { owner: false, self: managers.allowed.userId, integrations: 'all', allowAllDeals: false, allowedUsers: [managers.all.userId] },
    },
  );
  for (let i = 0; i < 8; i++)
    customers.push(await seeder.customer(`Customer ${i}`, i % 2 ? { email: `c${i}@example.com`, phone: '+15550100' } : {}));
  statuses = await statusesOf(h, owner.accountId);
  expect(statuses.map((s) => s.type).sort()).toEqual(['active', 'active', 'completed', 'failed', 'ignore']);

  const users = [null, owner.userId, managers.sources.userId, managers.all.userId, managers.allowed.userId];
  const message = fc.record({ at: fc.nat(40), incoming: fc.boolean(), unread: fc.boolean(), comment: fc.boolean() });
  const spec = fc.record({
    integration: fc.nat(2),
    customer: fc.nat(7),
    user: fc.nat(users.length - 1),
    status: fc.nat(statuses.length),
    created: fc.nat(40),
    messages: fc.array(message, { maxLength: 3 }),
    tags: fc.subarray(TAGS),
  });
  for (const s of fc.sample(spec, { seed: 20260301, numRuns: 90 })) {
    const integration = integrations[s.integration];
    const sourceType = (comment: boolean) =>
      integration.type === 'widget'
        ? 'message'
        : integration.type === 'social1_group'
          ? comment
            ? 'comment'
            : 'photo'
          : comment
            ? 'comment'
            : 'message';
    leads.push(
      await seeder.lead({
        integration,
        customerId: customers[s.customer],
        userId: users[s.user],
        status: s.status === 0 ? null : statuses[s.status - 1],
        createdAt: T0 + s.created * MIN,
        messages: s.messages.map((m) => ({
          at: T0 + m.at * MIN,
          incoming: m.incoming,
          unread: m.unread,
          sourceType: sourceType(m.comment),
        })),
        tags: s.tags,
      }),
    );
  }
});
afterAll(() => h.close());

type Form = 'repeat' | 'comma' | 'brackets' | 'mixed';

function repeatedForm(name: string, values: Array<string | number>, form: Form): string[] {
  const enc = values.map((v) => encodeURIComponent(String(v)));
  switch (form) {
    case 'repeat':
      return enc.map((v) => `${name}=${v}`);
    case 'comma':
      return [`${name}=${enc.join(',')}`];
    case 'brackets':
      return enc.map((v) => `${name}[]=${v}`);
    case 'mixed':
      return enc.map((v, i) => (i % 2 ? `${name}[]=${v}` : `${name}=${v}`));
  }
}

function queryString(f: RefFilters, page: { limit?: number; offset?: number }, form: Form, withStatuses = true): string {
  const parts: string[] = [];
  if (page.limit !== undefined) parts.push(`limit=${page.limit}`);
  if (page.offset !== undefined) parts.push(`offset=${page.offset}`);
  if (f.types) parts.push(...repeatedForm('types', f.types, form));
  if (f.sa) parts.push(...repeatedForm('sa', f.sa, form));
  if (f.tags) parts.push(...repeatedForm('tags', f.tags, form));
  if (f.users) parts.push(...repeatedForm('users', f.users, form));
  if (f.statuses && withStatuses) parts.push(...repeatedForm('statuses', f.statuses, form));
  if (f.customer !== undefined) parts.push(`customer=${f.customer}`);
  if (f.sourceKinds) parts.push(...repeatedForm('source_types', f.sourceKinds, form));
  if (f.unread) parts.push(`unread=${f.unread}`);
  if (f.lastMessageFrom !== undefined) parts.push(`lastMessageFrom=${f.lastMessageFrom}`);
  if (f.lastMessageTo !== undefined) parts.push(`lastMessageTo=${f.lastMessageTo}`);
  if (f.ignore !== undefined) parts.push(`ignore=${f.ignore}`);
  if (f.ids) parts.push(...repeatedForm('id', f.ids, form));
  parts.push('utm_source=newsletter'); // unknown parameters are ignored
  return parts.join('&');
}

const BASIC: Array<keyof RefFilters> = ['types', 'sa', 'tags', 'users', 'statuses'];
const basicOnly = (f: RefFilters): RefFilters =>
  Object.fromEntries(Object.entries(f).filter(([k]) => BASIC.includes(k as keyof RefFilters)));

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });
const filtersArb = () =>
  fc.record({
    types: opt(fc.subarray(['widget', 'social1_group', 'msgrb_personal', 'no_such_type'], { minLength: 1 })),
    sa: opt(fc.subarray([...integrations.map((i) => i.id), 999_999], { minLength: 1 })),
    tags: opt(fc.subarray([...TAGS, 'nothing'], { minLength: 1 })),
    users: opt(
      fc.subarray([owner.userId, managers.sources.userId, managers.all.userId, managers.allowed.userId, 999_999], { minLength: 1 }),
    ),
    statuses: opt(fc.subarray([...statuses.map((s) => s.id), 999_999], { minLength: 1 })),
    customer: opt(fc.constantFrom(...customers, 999_999)),
    sourceKinds: opt(fc.subarray(['message', 'comment'] as Array<'message' | 'comment'>, { minLength: 1 })),
    unread: opt(fc.constantFrom('unread', 'read', 'unanswered', 'answered') as fc.Arbitrary<RefFilters['unread']>),
    lastMessageFrom: opt(fc.nat(40).map((k) => T0 + k * MIN)),
    lastMessageTo: opt(fc.nat(40).map((k) => T0 + k * MIN)),
    ignore: opt(fc.boolean()),
    ids: opt(fc.subarray([...leads.slice(0, 30).map((l) => l.id), 999_999], { minLength: 1 })),
  }) as fc.Arbitrary<RefFilters>;

const ids = (body: Array<{ id: number }>) => body.map((l) => l.id);

describe('lead lists against a reference (property)', () => {
  it('answer the reference page and total for random lists, filters, forms, pages, versions and callers', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          version: fc.constantFrom('v1.1', 'v1.2', 'v1.3'),
          list: fc.constantFrom<ListName>('inbox', 'active', 'completed', 'all', 'leads'),
          actor: fc.nat(actors.length - 1),
          filters: filtersArb(),
          limit: opt(fc.integer({ min: 1, max: 60 })),
          offset: opt(fc.nat(50)),
          form: fc.constantFrom<Form>('repeat', 'comma', 'brackets', 'mixed'),
        }),
        async ({ version, list: drawn, actor, filters, limit, offset, form }) => {
          const extended = version === 'v1.3';
          const list: ListName = drawn === 'leads' && !extended ? 'all' : drawn;
          const withStatuses = list !== 'inbox';
          const applied = { ...(extended ? filters : basicOnly(filters)) };
          if (!withStatuses) delete applied.statuses;
          const url = `/${version}/leads${list === 'leads' ? '' : `/${list}`}?${queryString(filters, { limit, offset }, form, withStatuses)}`;
          const res = await h.request({ method: 'GET', url, token: actors[actor].token });
          expect(res.statusCode, `${url} ${res.body}`).toBe(200);
          const expected = referenceList(leads, list, applied, actors[actor].ref);
          const start = offset ?? 0;
          expect(ids(res.json()), url).toEqual(expected.slice(start, start + (limit ?? 50)).map((l) => l.id));
          expect(res.headers['x-total-count'], url).toBe(String(expected.length));
        },
      ),
      { numRuns: 50 },
    );
  });

  it('answer the reference funnel: every non-ignore status with its own page (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          actor: fc.nat(actors.length - 1),
          filters: filtersArb(),
          limit: opt(fc.integer({ min: 1, max: 8 })),
          offset: opt(fc.nat(4)),
          form: fc.constantFrom<Form>('repeat', 'comma', 'brackets'),
        }),
        async ({ actor, filters, limit, offset, form }) => {
          const url = `/v1.3/leads/funnel?${queryString(filters, { limit, offset }, form)}`;
          const res = await h.request({ method: 'GET', url, token: actors[actor].token });
          expect(res.statusCode, res.body).toBe(200);
          const columns = statuses
            .filter((s) => s.type !== 'ignore' && (!filters.statuses || filters.statuses.includes(s.id)))
            .sort(
              (a, b) =>
                ['active', 'completed', 'failed'].indexOf(a.type) - ['active', 'completed', 'failed'].indexOf(b.type) ||
                a.position - b.position ||
                a.id - b.id,
            );
          const body = res.json() as Array<{ id: number; leads: Array<{ id: number }> }>;
          expect(
            body.map((c) => c.id),
            url,
          ).toEqual(columns.map((s) => s.id));
          let total = 0;
          for (const column of body) {
            const all = referenceList(leads, 'all', { ...filters, ignore: undefined, ids: filters.ids }, actors[actor].ref).filter(
              (l) => l.statusId === column.id,
            );
            total += all.length;
            const start = offset ?? 0;
            expect(ids(column.leads), `${url} status ${column.id}`).toEqual(all.slice(start, start + (limit ?? 50)).map((l) => l.id));
          }
          expect(res.headers['x-total-count']).toBe(String(total));
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('each filter alone', () => {
  const cases: Array<[string, () => RefFilters]> = [
    ['types', () => ({ types: ['social1_group'] })],
    ['sa', () => ({ sa: [integrations[2].id] })],
    ['tags', () => ({ tags: ['vip'] })],
    ['users', () => ({ users: [managers.all.userId] })],
    ['statuses', () => ({ statuses: [statuses[0].id] })],
    ['customer', () => ({ customer: customers[3] })],
    ['source_types', () => ({ sourceKinds: ['comment'] })],
    ['unread=unread', () => ({ unread: 'unread' })],
    ['unread=read', () => ({ unread: 'read' })],
    ['unread=unanswered', () => ({ unread: 'unanswered' })],
    ['unread=answered', () => ({ unread: 'answered' })],
    ['lastMessageFrom', () => ({ lastMessageFrom: T0 + 20 * MIN })],
    ['lastMessageTo', () => ({ lastMessageTo: T0 + 20 * MIN })],
    ['ignore', () => ({ ignore: true })],
    ['id', () => ({ ids: leads.slice(0, 5).map((l) => l.id) })],
  ];
  for (const [name, make] of cases) {
    it(`${name}: matches the reference on the all list, and narrows it`, async () => {
      const f = make();
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?limit=200&${queryString(f, {}, 'repeat')}`, token: owner.access });
      expect(res.statusCode).toBe(200);
      const expected = referenceList(leads, 'all', f, { owner: true });
      expect(ids(res.json())).toEqual(expected.map((l) => l.id));
      // The filter does something on this data: some leads pass and some do not.
      const everything = referenceList(leads, 'all', { ignore: f.ignore }, { owner: true });
      if (name !== 'ignore') {
        expect(expected.length).toBeGreaterThan(0);
        expect(expected.length).toBeLessThan(everything.length);
      } else {
        expect(expected.length).toBeGreaterThan(referenceList(leads, 'all', {}, { owner: true }).length);
      }
    });
  }

  it('combined: all at once match the reference', async () => {
    const f: RefFilters = {
      types: ['msgrb_personal', 'widget'],
      tags: ['vip', 'b2b', 'wholesale'],
      unread: 'read',
      lastMessageFrom: T0 + 5 * MIN,
    };
    const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?limit=200&${queryString(f, {}, 'comma')}`, token: owner.access });
    const expected = referenceList(leads, 'all', f, { owner: true });
    expect(expected.length).toBeGreaterThan(0);
    expect(ids(res.json())).toEqual(expected.map((l) => l.id));
  });
});

describe('list shapes', () => {
  it('list items carry exactly the documented fields; message null without messages', async () => {
    const res = await h.request({ method: 'GET', url: '/v1.3/leads/all?limit=200&ignore=true', token: owner.access });
    const body = res.json() as Array<Record<string, any>>;
    expect(body).toHaveLength(leads.length);
    const keys = [
      'id',
      'userId',
      'statusId',
      'read',
      'details',
      'amount',
      'tags',
      'socialAccount',
      'responseTime',
      'customer',
      'message',
      'address',
      'ttn',
      'customData',
      'customFields',
      'paymentTypeId',
      'items',
      'createdAt',
      'awaitingSince',
    ];
    for (const item of body) {
      expect(Object.keys(item).sort()).toEqual([...keys].sort());
      const seeded = leads.find((l) => l.id === item.id)!;
      const integration = integrations.find((i) => i.id === seeded.integrationId)!;
      expect(item.socialAccount).toEqual({ id: integration.id, login: 'shop', type: integration.type });
      expect(Object.keys(item.customer).sort()).toEqual(['avatar', 'email', 'id', 'login', 'name', 'phone']);
      expect(item.customer.id).toBe(seeded.customerId);
      expect(item.tags).toEqual([...seeded.tags].sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()) || (a < b ? -1 : 1)));
      expect(item.read).toBe(seeded.unreadCount === 0);
      expect(item.createdAt).toBe(new Date(seeded.createdAt).toISOString());
      expect(item.customFields).toBe('{}');
      expect(item.items).toEqual([]);
      if (seeded.messageCount === 0) {
        expect(item.message).toBeNull();
      } else {
        expect(Object.keys(item.message).sort()).toEqual(['data', 'incoming', 'timestamp', 'unread']);
        expect(item.message.unread).toBe(seeded.unreadCount);
        expect(item.message.timestamp).toBe(new Date(seeded.lastMessageAt).toISOString());
        expect(item.message.incoming).toBe(seeded.lastMessageIncoming === 1);
        expect(Object.keys(item.message.data).sort()).toEqual(['attachments', 'text', 'url']);
      }
      expect(item.responseTime).toBe(seeded.responseTime);
    }
  });

  it('are the same on every version, but for the v1.3 `awaitingSince`', async () => {
    const answers = await Promise.all(
      ['v1.1', 'v1.2', 'v1.3'].map((v) => h.request({ method: 'GET', url: `/${v}/leads/active?limit=20`, token: owner.access })),
    );
    for (const res of answers) expect(res.statusCode).toBe(200);
    const v13 = (answers[2].json() as Array<Record<string, unknown>>).map(({ awaitingSince, ...rest }) => {
      expect(awaitingSince === null || typeof awaitingSince === 'number').toBe(true);
      return rest;
    });
    expect(answers[0].json()).toEqual(v13);
    expect(answers[1].json()).toEqual(v13);
  });

  it('order by last message, newest first, then by id', async () => {
    const res = await h.request({ method: 'GET', url: '/v1.3/leads/all?limit=200&ignore=true', token: owner.access });
    expect(ids(res.json())).toEqual([...leads].sort(listOrder).map((l) => l.id));
  });

  it('v1.1 and v1.2 ignore the v1.3 filters; /leads and statistics exist only on v1.3', async () => {
    const f = `customer=${customers[0]}&unread=unread&id=${leads[0].id}&ignore=true`;
    for (const v of ['v1.1', 'v1.2']) {
      const res = await h.request({ method: 'GET', url: `/${v}/leads/all?limit=200&${f}`, token: owner.access });
      expect(ids(res.json())).toEqual(referenceList(leads, 'all', {}, { owner: true }).map((l) => l.id));
      expect((await h.request({ method: 'GET', url: `/${v}/leads?id=${leads[0].id}`, token: owner.access })).statusCode).toBe(404);
    }
  });

  it('GET /v1.3/leads?id=..&id=.. answers those leads, ignore statuses included', async () => {
    const ignored = leads.find((l) => l.statusType === 'ignore')!;
    const other = leads.find((l) => l.statusType === 'inbox')!;
    const res = await h.request({ method: 'GET', url: `/v1.3/leads?id=${ignored.id}&id=${other.id}`, token: owner.access });
    expect(ids(res.json()).sort()).toEqual([ignored.id, other.id].sort());
    const without = await h.request({
      method: 'GET',
      url: `/v1.3/leads?id=${ignored.id}&id=${other.id}&ignore=false`,
      token: owner.access,
    });
    expect(ids(without.json())).toEqual([other.id]);
  });
});

describe('limits and bad input', () => {
  it('v1.1 clamps limit=500 to 200; v1.2 and v1.3 answer 400', async () => {
    const other = await h.signUp();
    const integration = await createIntegration(h, other.accountId);
    const customer = await h.database.db.kysely
      .insertInto('customers')
      .values({ account_id: other.accountId, name: 'Bulk', created_at: T0, updated_at: T0 })
      .returning('id')
      .executeTakeFirstOrThrow();
    await h.database.db.kysely
      .insertInto('leads')
      .values(
        Array.from({ length: 205 }, (_, i) => ({
          account_id: other.accountId,
          integration_id: integration,
          customer_id: customer.id,
          last_message_at: T0 + i,
          created_at: T0,
          updated_at: T0,
        })),
      )
      .execute();
    const v11 = await h.request({ method: 'GET', url: '/v1.1/leads/inbox?limit=500', token: other.access });
    expect(v11.statusCode).toBe(200);
    expect(v11.json()).toHaveLength(200);
    expect(v11.headers['x-total-count']).toBe('205');
    for (const v of ['v1.2', 'v1.3']) {
      const res = await h.request({ method: 'GET', url: `/${v}/leads/inbox?limit=500`, token: other.access });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_failed' });
    }
    const exact = await h.request({ method: 'GET', url: '/v1.3/leads/inbox?limit=200', token: other.access });
    expect(exact.json()).toHaveLength(200);
    const rest = await h.request({ method: 'GET', url: '/v1.3/leads/inbox?offset=200', token: other.access });
    expect(rest.json()).toHaveLength(5);
    const byDefault = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: other.access });
    expect(byDefault.json()).toHaveLength(50);
  });

  const bad: Array<[string, string]> = [
    ['limit=0', '/leads/all?limit=0'],
    ['limit=-5', '/leads/all?limit=-5'],
    ['offset=-1', '/leads/all?offset=-1'],
    ['limit=abc', '/leads/all?limit=abc'],
    ['sa=abc', '/leads/all?sa=abc'],
    ['users=1,x', '/leads/active?users=1,x'],
    ['statuses[]=x', '/leads/active?statuses[]=x'],
    ['statuses on the inbox', '/leads/inbox?statuses=1'],
    ['statuses[] on the inbox', '/leads/inbox?statuses[]=1'],
  ];
  for (const [label, path] of bad) {
    it(`${label} -> 400 on v1.2 and v1.3, the v1.1 error body on v1.1`, async () => {
      for (const v of ['v1.2', 'v1.3']) {
        const res = await h.request({ method: 'GET', url: `/${v}${path}`, token: owner.access });
        expect(res.statusCode, `${v}${path}`).toBe(400);
        expect(res.json()).toMatchObject({ code: 'validation_failed', error: expect.any(String) });
      }
      const legacy = await h.request({ method: 'GET', url: `/v1.1${path}`, token: owner.access });
      expect(legacy.statusCode).toBe(400);
      expect(legacy.json()).toMatchObject({ statusCode: 400, message: expect.any(String) });
    });
  }

  for (const q of [
    'unread=maybe',
    'source_types=fax',
    'source_types=message,fax',
    'ignore=perhaps',
    'customer=abc',
    'lastMessageFrom=yesterday',
    'id=1,two',
  ]) {
    it(`${q} -> 400 on v1.3`, async () => {
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?${q}`, token: owner.access });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    });
  }

  it('values that name nothing match nothing; empty values filter nothing; unknown parameters are ignored', async () => {
    for (const q of [
      'types=fax_machine',
      'sa=999999',
      'tags=nothing-like-this',
      'users=999999',
      'statuses=999999',
      'customer=999999',
      'id=999999',
    ]) {
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?${q}`, token: owner.access });
      expect(res.statusCode, q).toBe(200);
      expect(res.json(), q).toEqual([]);
      expect(res.headers['x-total-count']).toBe('0');
    }
    const all = referenceList(leads, 'all', {}, { owner: true }).length;
    for (const q of ['types=', 'tags=&sa=', 'foo=bar&limit=200&page=3']) {
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?${q}`, token: owner.access });
      expect(res.statusCode, q).toBe(200);
      expect(res.headers['x-total-count'], q).toBe(String(all));
    }
  });

  it('needs a token', async () => {
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/all' })).statusCode).toBe(401);
  });
});

describe('repeated parameters', () => {
  it('the three forms, alone and mixed, give the same values (property)', () => {
    const value = fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes(',') && s.trim() === s && s.length > 0);
    fc.assert(
      fc.property(
        fc.uniqueArray(value, { minLength: 1, maxLength: 8 }),
        fc.array(fc.constantFrom('repeat', 'comma', 'brackets'), { minLength: 1, maxLength: 8 }),
        (values, forms) => {
          // Split the values into groups, each written in one form, as a parsed query string would carry them.
          const query: Record<string, unknown> = {};
          const push = (key: string, v: string) => {
            const prev = query[key];
            query[key] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
          };
          let i = 0;
          let g = 0;
          while (i < values.length) {
            const form = forms[g++ % forms.length];
            const group = values.slice(i, i + 1 + (g % 3));
            i += group.length;
            if (form === 'comma') push('tags', group.join(','));
            else for (const v of group) push(form === 'brackets' ? 'tags[]' : 'tags', v);
          }
          const got = repeatedParam(query, 'tags')!;
          expect([...got].sort()).toEqual([...values].sort());
        },
      ),
      { numRuns: 200 },
    );
  });

  it('trims, drops empty values, keeps each value once, and reports absence', () => {
    expect(repeatedParam({ a: [' 1 , 2', '', '2'], 'a[]': ['3', ','] }, 'a')).toEqual(['1', '2', '3']);
    expect(repeatedParam({ b: '1' }, 'a')).toBeUndefined();
    expect(repeatedParam({ a: '' }, 'a')).toEqual([]);
    expect(parseLeadQuery({ a: '1' }, { list: 'all', extended: true, clampLimit: false }).filters).toEqual({});
  });
});

describe('queries per page', () => {
  it('a page of 200 leads costs a fixed number of queries, whatever its size', async () => {
    let count = 0;
    const counting = h.database.db.kysely.withPlugin({
      transformQuery: (args) => args.node,
      // Called once per executed query (compiling a query alone does not count).
      transformResult: async (args) => {
        count++;
        return args.result;
      },
    });
    // A fresh service each time: no count remembered from an earlier call.
    const service = () => new LeadsService({ ...h.services.deps, db: { ...h.database.db, kysely: counting } });
    const user = await h.database.db.kysely.selectFrom('users').selectAll().where('id', '=', owner.userId).executeTakeFirstOrThrow();
    const auth = { accountId: owner.accountId, userId: owner.userId, role: 'owner' as const, typ: 'access' as const, user };
    const q = (limit: number) => parseLeadQuery({ limit, ignore: true }, { list: 'all', extended: true, clampLimit: false });
    const queries = async (fn: (s: LeadsService) => Promise<unknown>) => {
      const s = service();
      count = 0;
      await fn(s);
      return count;
    };
    const small = await queries(async (s) => expect((await s.list(auth, 'all', q(2))).entries).toHaveLength(2));
    const big = await queries(async (s) => expect((await s.list(auth, 'all', q(200))).entries).toHaveLength(leads.length));
    expect(big).toBe(small);
    expect(big).toBeLessThanOrEqual(5);
    const funnelBig = await queries((s) => s.funnel(auth, q(200)));
    const funnelSmall = await queries((s) => s.funnel(auth, q(1)));
    expect(funnelBig).toBe(funnelSmall);
    expect(funnelBig).toBeLessThanOrEqual(6);
  });

  it('pages and totals follow every write, whoever makes it (nothing stale from the read cache)', async () => {
    const other = await h.signUp();
    const integration = await createIntegration(h, other.accountId);
    const inbox = async () => {
      const res = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: other.access });
      return { total: res.headers['x-total-count'], details: res.json().map((l: { details: string }) => l.details) };
    };
    expect(await inbox()).toEqual({ total: '0', details: [] });
    expect(await inbox()).toEqual({ total: '0', details: [] });
    const { leadId } = await createLead(h, other.accountId, integration);
    expect(await inbox()).toEqual({ total: '1', details: [''] });
    const db = h.database.db.kysely;
    await db.updateTable('leads').set({ details: 'changed behind the service' }).where('id', '=', leadId).execute();
    expect(await inbox()).toEqual({ total: '1', details: ['changed behind the service'] });
    await db.updateTable('leads').set({ status_type: 'active' }).where('id', '=', leadId).execute();
    expect(await inbox()).toEqual({ total: '0', details: [] });
    await db.updateTable('leads').set({ status_type: 'inbox' }).where('id', '=', leadId).execute();
    expect((await inbox()).total).toBe('1');
    // A write that is rolled back leaves the data as it was; answers stay right either way.
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.updateTable('leads').set({ details: 'never' }).where('id', '=', leadId).execute();
        throw new Error('roll back');
      })
      .catch(() => undefined);
    expect(await inbox()).toEqual({ total: '1', details: ['changed behind the service'] });
  });
});

describe('statistics (v1.3)', () => {
  it('counts per list and status, new leads per day, median response time, with filters', async () => {
    for (const f of [{}, { sa: [integrations[0].id, integrations[2].id] }, { tags: ['vip'] }] as RefFilters[]) {
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/statistics?${queryString(f, {}, 'comma')}`, token: owner.access });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      const every = referenceList(leads, 'all', { ...f, ignore: true }, { owner: true });
      const count = (types: string[]) => every.filter((l) => types.includes(l.statusType)).length;
      expect(body.lists).toEqual({
        inbox: count(['inbox']),
        active: count(['active']),
        completed: count(['completed', 'failed']),
        all: count(['inbox', 'active', 'completed', 'failed']),
        ignore: count(['ignore']),
      });
      expect(body.statuses).toHaveLength(statuses.length);
      for (const s of body.statuses) expect(s.count).toBe(every.filter((l) => l.statusId === s.id).length);
      const all = every.filter((l) => l.statusType !== 'ignore');
      const days = new Map<string, number>();
      for (const l of all) {
        const d = new Date(l.createdAt).toISOString().slice(0, 10);
        days.set(d, (days.get(d) ?? 0) + 1);
      }
      expect(body.newLeads).toEqual([...days.entries()].sort().map(([date, n]) => ({ date, count: n })));
      const times = all
        .map((l) => l.responseTime)
        .filter((t): t is number => t !== null)
        .sort((a, b) => a - b);
      const mid =
        times.length % 2
          ? times[(times.length - 1) / 2]
          : times.length
            ? Math.round((times[times.length / 2 - 1] + times[times.length / 2]) / 2)
            : null;
      expect(body.responseTime).toEqual({ median: mid, count: times.length });
    }
  });

  it('breaks the all list down per employee and per channel type (count, median response time), within a creation range', async () => {
    const from = T0 + 10 * MIN;
    const to = T0 + 30 * MIN;
    const res = await h.request({
      method: 'GET',
      url: `/v1.3/leads/statistics?createdFrom=${from}&createdTo=${to}&breakdowns=true`,
      token: owner.access,
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const all = leads.filter((l) => l.statusType !== 'ignore' && l.createdAt >= from && l.createdAt <= to);
    expect(body.lists.all).toBe(all.length);
    const expected = <K>(keyOf: (l: SeededLead) => K) => {
      const groups = new Map<K, SeededLead[]>();
      for (const l of all) groups.set(keyOf(l), [...(groups.get(keyOf(l)) ?? []), l]);
      return [...groups.entries()].map(([key, ls]) => {
        const times = ls
          .map((l) => l.responseTime)
          .filter((t): t is number => t !== null)
          .sort((a, b) => a - b);
        const n = times.length;
        const median = n === 0 ? null : n % 2 ? times[(n - 1) / 2] : Math.round((times[n / 2 - 1] + times[n / 2]) / 2);
        return { key, count: ls.length, responseTime: { median, count: n } };
      });
    };
    const byKey = <T>(rows: T[], key: (r: T) => unknown) => [...rows].sort((a, b) => String(key(a)).localeCompare(String(key(b))));
    expect(byKey(body.employees as Array<{ userId: number | null }>, (r) => r.userId)).toEqual(
      byKey(
        expected((l) => l.userId).map(({ key, ...r }) => ({ userId: key, ...r })),
        (r) => r.userId,
      ),
    );
    expect(byKey(body.channels as Array<{ type: string }>, (r) => r.type)).toEqual(
      byKey(
        expected((l) => l.integrationType).map(({ key, ...r }) => ({ type: key, ...r })),
        (r) => r.type,
      ),
    );
    for (let i = 1; i < body.employees.length; i++) expect(body.employees[i - 1].count).toBeGreaterThanOrEqual(body.employees[i].count);
    // The range is a v1.3 list filter too.
    const list = await h.request({
      method: 'GET',
      url: `/v1.3/leads/all?createdFrom=${from}&createdTo=${to}&limit=200`,
      token: owner.access,
    });
    expect(
      list
        .json()
        .map((l: { id: number }) => l.id)
        .sort(),
    ).toEqual(all.map((l) => l.id).sort());
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/statistics?createdFrom=1e300', token: owner.access })).statusCode).toBe(400);
    // Without breakdowns=true (list counts), neither breakdown is read nor answered.
    const plain = (await h.request({ method: 'GET', url: '/v1.3/leads/statistics', token: owner.access })).json();
    expect(plain.employees).toBeUndefined();
    expect(plain.channels).toBeUndefined();
  });

  it('a manager counts only the leads it sees', async () => {
    const res = await h.request({ method: 'GET', url: '/v1.3/leads/statistics', token: managers.sources.access });
    const seen = leads.filter((l) => visibleTo(actors[1].ref, l));
    expect(res.json().lists.all).toBe(seen.filter((l) => l.statusType !== 'ignore').length);
  });

  it('bad filters -> 400; unknown ones (offset, limit) are ignored', async () => {
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/statistics?unread=maybe', token: owner.access })).statusCode).toBe(400);
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/statistics?limit=5000&offset=-3', token: owner.access })).statusCode).toBe(
      200,
    );
  });
});
