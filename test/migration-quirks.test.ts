import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAccount } from '../src/domain/migration/account-migrator.js';
import { createHarness, type Harness } from './helpers/harness.js';
import { serve } from './helpers/migration-source.js';

// A recorded fake of a hosted server's quirks: ids as strings, `userID`, times as Unix seconds in
// text or ISO text, statuses and tags only on v1.2, `ok` for social3, an expired access token that
// the refresh token renews, a lead without an id and a history page past the size limit.
const seen: string[] = [];
const HUGE = 'x'.repeat(200_000);

const routes: Record<string, unknown> = {
  'GET /v1.3/account/me': { account: { id: '77', status: 'active' } },
  'GET /v1.3/managers': [
    { id: '1', login: 'Boss@Example.com', name: 'Boss', role: 'owner', confirmed: true, allowAllDeals: true, sources: [] },
    {
      id: '2',
      login: 'agent@example.com',
      name: null,
      role: 'manager',
      confirmed: false,
      allowAllDeals: 'false',
      sources: [{ id: '9', saId: '10' }],
    },
  ],
  'GET /v1.3/integrations': [
    { id: '10', type: 'msgra2', login: 'shop', externalId: 123, status: 'active' },
    { id: '11', type: 'ok', login: 'group', status: 'active' },
    { id: '12', type: 'pager', login: 'beeper' },
  ],
  'GET /v1.2/statuses': [
    { id: '5', name: 'Work', type: 'active', order: '1', color: '#ffffff' },
    { id: '6', name: 'Far', type: 'failed', order: 1e20, color: '' },
  ],
  'GET /v1.3/payment-types': [{ id: '3', title: 'Cash' }],
  'GET /v1.2/tags': [{ id: 1, tag: 'hot' }],
  'GET /v1.3/templates': [],
  'GET /v1.3/webhooks': [{ id: 1, url: 'https://crm.example.com/hook' }],
  'GET /v1.3/leads/all': [
    {
      id: '1001',
      userID: '2',
      statusId: '5',
      read: 'false',
      details: 'call back',
      amount: '1500',
      tags: ['hot', 'New'],
      socialAccount: { id: '10', login: 'shop', type: 'msgra2' },
      customer: { id: '100', login: 'ann', name: 'Ann' },
      message: { unread: '1', timestamp: '2024-05-01T10:00:00.000Z', incoming: true },
      customFields: { size: 'L' },
      items: [{ title: 'Shirt', count: 1 }],
      paymentTypeId: '3',
    },
    { userId: 2, customer: { id: '5' }, socialAccount: { id: '10' } },
    {
      id: 1003,
      socialAccount: { id: 10 },
      customer: { id: 100 },
      details: 'a\u0000b',
      amount: 1e30,
      responseTime: 1.5e300,
      customData: 'c\u0000',
      items: [{ title: 't\u0000', count: 1 }],
    },
    { id: 1002, socialAccount: { id: 11 }, customer: { id: 101, name: 'Bob', login: 'bob' }, message: { timestamp: 1714550000 } },
  ],
  'GET /v1.3/customers/100': {
    id: '100',
    login: 'ann',
    name: 'Ann',
    email: 'ann@example.com',
    phone: null,
    profiles: [{ id: '500', type: 'msgra2', socialId: 'ann1', login: 'ann', profileUrl: '' }],
  },
  'GET /v1.3/messaging/1001/sources': [{ id: 'chat1', realId: '900', type: 'message', saId: '10', sender: 'ann1', expies: null }],
  'POST /v1.3/messaging/1001/history/900': {
    cursor: '2',
    messages: [
      {
        messageId: 'm2',
        datetime: '1714557600',
        incoming: 'false',
        message: { text: 'hi Ann', attachments: [] },
        sender: { id: 123, userID: '2' },
      },
    ],
  },
  'POST /v1.3/messaging/1001/history/900 2': {
    cursor: -1,
    messages: [{ messageId: 'm1', datetime: 1714557500000, incoming: true, sender: { id: '500' }, message: { text: 'hello' } }],
  },
  'GET /v1.3/messaging/1002/sources': [{ id: 'c2', realId: 901, type: 'message', saId: 11, sender: 'bob' }],
  'POST /v1.3/messaging/1002/history/901': { cursor: -1, messages: [{ messageId: 'x', datetime: 1, message: { text: HUGE } }] },
};

async function handler(req: http.IncomingMessage, res: http.ServerResponse) {
  let body = '';
  for await (const chunk of req) body += chunk;
  const path = (req.url ?? '').split('?')[0];
  const auth = req.headers.authorization ?? '';
  seen.push(`${req.method} ${path} ${auth}`);
  const send = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  if (req.method === 'POST' && path === '/v1.3/auth/tokens') {
    return JSON.parse(body).refreshToken === 'refresh-1' ? send(200, { accessToken: { token: 'fresh', exp: 2e9 } }) : send(401, {});
  }
  if (auth !== 'Bearer fresh') return send(401, { message: 'Token expired' });
  const cursor = body ? (JSON.parse(body) as { cursor?: unknown }).cursor : undefined;
  const key = `${req.method} ${path}${cursor === undefined ? '' : ` ${cursor}`}`;
  if (path.startsWith('/v1.3/leads/') && !path.endsWith('/all')) return send(200, []);
  return key in routes ? send(200, routes[key]) : send(404, { message: 'Not found' });
}

let h: Harness;
let fake: { url: string; close(): Promise<void> };
beforeAll(async () => {
  h = await createHarness();
  fake = await serve((req, res) => void handler(req, res));
});
afterAll(async () => {
  await fake?.close();
  await h?.close();
});

describe('parley migrate against a hosted server with quirks', () => {
  it('reads string ids, userID, text times and v1.2-only lists; renews the token; skips and reports what breaks its schema', async () => {
    const report = await migrateAccount(
      h.services,
      {
        from: `${fake.url}/v1.3/`,
        token: 'expired',
        refreshToken: 'refresh-1',
        dryRun: false,
        rate: 1000,
        concurrency: 2,
        maxBody: 64 * 1024,
        sleep: async () => {},
      },
      () => {},
    );
    expect(seen.filter((s) => s.startsWith('POST /v1.3/auth/tokens'))).toHaveLength(1);
    expect(report.copied).toMatchObject({
      integrations: 2,
      employees: 2,
      statuses: 2,
      'payment types': 1,
      leads: 3,
      messages: 2,
      customers: 2,
    });
    expect(report.skipped).toEqual(
      expect.arrayContaining([
        { kind: 'integration', id: '12', reason: 'type pager is not one Parley connects' },
        { kind: 'lead', id: 'all #2', reason: 'a lead without a valid id' },
        expect.objectContaining({ kind: 'customer', id: '101', reason: expect.stringMatching(/answered 404; copied from the lead list/) }),
        expect.objectContaining({ kind: 'history', id: '1002/901', reason: expect.stringMatching(/larger than 65536 bytes/) }),
      ]),
    );
    expect(report.webhooks).toEqual(['https://crm.example.com/hook']);
    // No bulk form here (404): asked once each, then one request per customer and per channel list.
    expect(seen.filter((s) => s.startsWith('GET /v1.3/customers '))).toHaveLength(1);
    expect(seen.filter((s) => s.startsWith('GET /v1.3/messaging/sources '))).toHaveLength(1);
    expect(report.requests.byKind).toMatchObject({ 'customers in bulk': 1, customers: 2, 'channel lists in bulk': 1, 'channel lists': 3 });

    const db = h.database.db.kysely;
    const accountId = report.accountId!;
    const users = await db.selectFrom('users').select(['id', 'login', 'role']).where('account_id', '=', accountId).orderBy('id').execute();
    expect(users.map((u) => [u.login, u.role])).toEqual([
      ['boss@example.com', 'owner'],
      ['agent@example.com', 'manager'],
    ]);
    const integrations = await db
      .selectFrom('integrations')
      .select(['id', 'type', 'external_id', 'status'])
      .where('account_id', '=', accountId)
      .orderBy('id')
      .execute();
    expect(integrations.map((i) => [i.type, i.external_id, i.status])).toEqual([
      ['msgra2', '123', 'auth failure'],
      ['social3', '', 'auth failure'],
    ]);
    const access = await db.selectFrom('user_sources').select('sa_id').where('user_id', '=', users[1]!.id).execute();
    expect(access).toEqual([{ sa_id: integrations[0]!.id }]);

    const lead = await db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('details', '=', 'call back')
      .executeTakeFirstOrThrow();
    const status = await db
      .selectFrom('statuses')
      .select(['id', 'type'])
      .where('account_id', '=', accountId)
      .where('name', '=', 'Work')
      .executeTakeFirstOrThrow();
    expect(lead).toMatchObject({
      user_id: users[1]!.id,
      status_id: status.id,
      status_type: 'active',
      amount: 1500,
      custom_fields: '{"size":"L"}',
      unread_count: 1,
    });
    expect(lead.items).toBe('[{"title":"Shirt","count":1}]');
    const tags = await db
      .selectFrom('lead_tags')
      .innerJoin('tags', 'tags.id', 'lead_tags.tag_id')
      .select('tags.tag')
      .where('lead_id', '=', lead.id)
      .orderBy('tags.tag')
      .execute();
    expect(tags.map((t) => t.tag)).toEqual(['New', 'hot']);
    const messages = await db.selectFrom('messages').selectAll().where('lead_id', '=', lead.id).orderBy('id').execute();
    const profile = await db.selectFrom('profiles').select('id').where('account_id', '=', accountId).executeTakeFirstOrThrow();
    expect(messages.map((m) => [m.text, m.created_at, m.incoming, m.profile_id, m.user_id, m.unread])).toEqual([
      ['hello', 1714557500000, 1, profile.id, null, 1],
      ['hi Ann', 1714557600000, 0, null, users[1]!.id, 0],
    ]);
    expect(lead.last_message_id).toBe(messages[1]!.id);
    expect(lead.last_message_at).toBe(1714557600000);
    // NUL and numbers past their columns do not reach the database (PostgreSQL refuses them).
    const odd = await db
      .selectFrom('leads')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('details', '=', 'ab')
      .executeTakeFirstOrThrow();
    expect(odd).toMatchObject({ amount: 0, response_time: null, custom_data: 'c', items: '[{"title":"t","count":1}]' });
    const bob = await db
      .selectFrom('customers')
      .select(['name', 'login'])
      .where('account_id', '=', accountId)
      .where('name', '=', 'Bob')
      .execute();
    expect(bob).toEqual([{ name: 'Bob', login: 'bob' }]);
  });

  it('--since keeps the leads whose last message is not older; a dry run of it writes nothing', async () => {
    const before = await h.database.db.kysely.selectFrom('migration_ids').select('kind').execute();
    const report = await migrateAccount(
      h.services,
      {
        from: fake.url,
        token: 'fresh',
        dryRun: true,
        since: Date.parse('2024-05-01T09:00:00Z'),
        rate: 1000,
        concurrency: 2,
        maxBody: 64 * 1024,
        sleep: async () => {},
      },
      () => {},
    );
    // 1001 (10:00) and 1003 (no date) are kept; 1002 (07:53) is older.
    expect(report.copied.leads ?? 0).toBe(0);
    expect(report.unchanged.leads).toBe(2);
    expect(await h.database.db.kysely.selectFrom('migration_ids').select('kind').execute()).toEqual(before);
  });
});
