import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type LeadFixture } from './helpers/fixtures.js';
import { runRoleMatrix, type Actors } from './helpers/role-matrix.js';
import { API_VERSIONS } from '../src/api/versions.js';
import { ChannelFailedError, ChannelRejectedError, type ChannelAdapter } from '../src/domain/channels/channel.js';

const CUSTOMER_KEYS = ['address', 'avatar', 'email', 'id', 'login', 'name', 'phone', 'profiles'];
const PROFILE_KEYS = ['id', 'login', 'profileUrl', 'socialId', 'type'];

let h: Harness;
let actors: Actors;
beforeAll(async () => {
  h = await createHarness();
  const owner = await h.signUp();
  actors = { owner, manager: await createManager(h, owner), other: await h.signUp() };
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

const get = (token: string, id: number, version = 'v1.3') => h.request({ method: 'GET', url: `/${version}/customers/${id}`, token });
const put = (token: string, id: number, payload: unknown, version = 'v1.3') =>
  h.request({ method: 'PUT', url: `/${version}/customers/${id}`, token, payload: payload as object });
const refresh = (token: string, id: number, version = 'v1.3') =>
  h.request({ method: 'POST', url: `/${version}/customers/${id}/update`, token, headers: { 'content-type': 'application/json' } });

async function customerRow(id: number) {
  return db().selectFrom('customers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

async function events(accountId: number, type = 'customer.changed') {
  return db().selectFrom('events').selectAll().where('account_id', '=', accountId).where('type', '=', type).orderBy('id').execute();
}

/** Everything a customer route may write, in every account. */
async function snapshot() {
  return {
    customers: await db().selectFrom('customers').selectAll().orderBy('id').execute(),
    profiles: await db().selectFrom('profiles').selectAll().orderBy('id').execute(),
    events: await db().selectFrom('events').selectAll().orderBy('id').execute(),
  };
}

async function customerOf(
  owner: Pick<SignedUp, 'accountId'>,
  opts: Parameters<typeof createLead>[3] = {},
  type = 'widget',
): Promise<LeadFixture> {
  return createLead(h, owner.accountId, await createIntegration(h, owner.accountId, type), opts);
}

describe('role matrix', () => {
  it('answers each role as docs/api/auth.md says, on every route and version', async () => {
    const { owner } = actors;
    const lead = await customerOf(owner);
    let n = 0;
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /customers/<id>',
          expect: { none: 401, manager: 200, other: 404, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/customers/${lead.customerId}` }),
        },
        {
          label: 'PUT /customers/<id>',
          expect: { none: 401, manager: 200, other: 404, owner: 200 },
          request: async (v) => ({ method: 'PUT', url: `/${v}/customers/${lead.customerId}`, payload: { name: `Name ${v} ${++n}` } }),
        },
        {
          label: 'POST /customers/<id>/update',
          expect: { none: 401, manager: 200, other: 404, owner: 200 },
          request: async (v) => ({ method: 'POST', url: `/${v}/customers/${lead.customerId}/update` }),
        },
      ],
      snapshot,
    );
  });

  it('answers 404 for a customer that does not exist; v1.3 400 and v1.1/v1.2 404 for a non-integer id', async () => {
    for (const v of API_VERSIONS) {
      expect((await get(actors.owner.access, 999999, v)).statusCode).toBe(404);
      expect((await h.request({ method: 'GET', url: `/${v}/customers/abc`, token: actors.owner.access })).statusCode).toBe(
        v === 'v1.3' ? 400 : 404,
      );
    }
  });
});

describe('GET /customers/<id>', () => {
  it('answers the Customer with its profiles, the same shape under every version', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner, { customerName: 'Olga' }, 'msgrb_bot');
    await db()
      .updateTable('customers')
      .set({ email: 'olga@example.com', avatar: 'https://cdn.example/o.jpg' })
      .where('id', '=', lead.customerId)
      .execute();
    for (const v of API_VERSIONS) {
      const res = await get(owner.access, lead.customerId, v);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(CUSTOMER_KEYS);
      expect(body).toMatchObject({
        id: lead.customerId,
        name: 'Olga',
        email: 'olga@example.com',
        phone: null,
        address: null,
        avatar: 'https://cdn.example/o.jpg',
      });
      expect(body.profiles).toHaveLength(1);
      expect(Object.keys(body.profiles[0]).sort()).toEqual(PROFILE_KEYS);
      expect(body.profiles[0]).toMatchObject({ id: lead.profileId, type: 'msgrb_bot', socialId: body.login, profileUrl: '' });
    }
    // Trailing slash accepted (docs/api/README.md).
    expect((await h.request({ method: 'GET', url: `/v1.3/customers/${lead.customerId}/`, token: owner.access })).statusCode).toBe(200);
  });
});

describe('manager visibility (through the leads it sees)', () => {
  it('sees customers of its own leads and of unassigned inbox leads, not of another manager’s leads', async () => {
    const owner = await h.signUp();
    const integration = await createIntegration(h, owner.accountId);
    const me = await createManager(h, owner);
    const colleague = await createManager(h, owner);
    const mine = await createLead(h, owner.accountId, integration, { userId: me.userId, statusType: 'active' });
    const inbox = await createLead(h, owner.accountId, integration, {});
    const theirs = await createLead(h, owner.accountId, integration, { userId: colleague.userId, statusType: 'active' });
    const unassignedActive = await createLead(h, owner.accountId, integration, { userId: null, statusType: 'active' });

    expect((await get(me.access, mine.customerId)).statusCode).toBe(200);
    expect((await get(me.access, inbox.customerId)).statusCode).toBe(200);
    expect((await get(me.access, theirs.customerId)).statusCode).toBe(404);
    expect((await get(me.access, unassignedActive.customerId)).statusCode).toBe(404);

    // Editing and refreshing follow the same rule, and a refused edit writes nothing.
    const before = await customerRow(theirs.customerId);
    expect((await put(me.access, theirs.customerId, { name: 'Hijacked' })).statusCode).toBe(404);
    expect((await refresh(me.access, theirs.customerId)).statusCode).toBe(404);
    expect(await customerRow(theirs.customerId)).toEqual(before);
    expect((await put(me.access, mine.customerId, { name: 'Mine' })).statusCode).toBe(200);

    // allowAllDeals sees every lead of its integrations; allowedUsers adds the colleague's.
    const all = await createManager(h, owner, { allowAllDeals: true });
    expect((await get(all.access, theirs.customerId)).statusCode).toBe(200);
    const trusted = await createManager(h, owner, { allowedUsers: [colleague.userId] });
    expect((await get(trusted.access, theirs.customerId)).statusCode).toBe(200);
  });

  it('sees nothing with sources [null], and only customers on its integrations otherwise', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId, 'widget', 'a');
    const b = await createIntegration(h, owner.accountId, 'msgrb_bot', 'b');
    const onA = await createLead(h, owner.accountId, a, {});
    const onB = await createLead(h, owner.accountId, b, {});
    const none = await createManager(h, owner, { sources: [null], allowAllDeals: true });
    expect((await get(none.access, onA.customerId)).statusCode).toBe(404);
    expect((await get(none.access, onB.customerId)).statusCode).toBe(404);
    const onlyA = await createManager(h, owner, { sources: [a] });
    expect((await get(onlyA.access, onA.customerId)).statusCode).toBe(200);
    expect((await get(onlyA.access, onB.customerId)).statusCode).toBe(404);
  });

  it('shows a manager only the profiles on integrations it may use; the owner sees them all', async () => {
    const owner = await h.signUp();
    const a = await createIntegration(h, owner.accountId, 'widget', 'a');
    const b = await createIntegration(h, owner.accountId, 'msgrb_bot', 'b');
    const lead = await createLead(h, owner.accountId, a, {});
    await db()
      .insertInto('profiles')
      .values({
        account_id: owner.accountId,
        customer_id: lead.customerId,
        integration_id: b,
        type: 'msgrb_bot',
        social_id: 'tg-1',
        created_at: h.clock.now(),
      })
      .execute();
    const onlyA = await createManager(h, owner, { sources: [a] });
    expect((await get(onlyA.access, lead.customerId)).json().profiles.map((p: { type: string }) => p.type)).toEqual(['widget']);
    expect((await get(owner.access, lead.customerId)).json().profiles.map((p: { type: string }) => p.type)).toEqual([
      'widget',
      'msgrb_bot',
    ]);
  });
});

describe('PUT /customers/<id>', () => {
  it('changes only the given fields, normalizes the phone, and records customer.changed with the customer', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner, { customerName: 'Ann' });
    const res = await put(owner.access, lead.customerId, { phone: '+1 (555) 010-9999', email: ' ann@example.com ', address: 'Main st. 1' });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ name: 'Ann', phone: '+15550109999', email: 'ann@example.com', address: 'Main st. 1' });
    expect(Object.keys(body).sort()).toEqual(CUSTOMER_KEYS);
    expect(await customerRow(lead.customerId)).toMatchObject({ name: 'Ann', phone: '+15550109999', email: 'ann@example.com' });

    const changed = await events(owner.accountId);
    expect(changed).toHaveLength(1);
    expect(JSON.parse(changed[0]!.payload)).toEqual({
      type: 'customer.changed',
      accountId: owner.accountId,
      customerId: lead.customerId,
      customer: body,
    });
    expect(changed[0]!.created_at).toBe(h.clock.now());
  });

  it('records no event and writes nothing when nothing changes', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner, { customerName: 'Same' });
    await put(owner.access, lead.customerId, { email: 'same@example.com' });
    h.clock.advance(60_000);
    const before = await snapshot();
    for (const body of [{ name: 'Same', email: 'same@example.com' }, {}, { unknown: 'field' }]) {
      const res = await put(owner.access, lead.customerId, body);
      expect(res.statusCode).toBe(200);
    }
    expect(await snapshot()).toEqual(before);
    expect(await events(owner.accountId)).toHaveLength(1);
  });

  it('clears e-mail, phone and address with null (or an empty string)', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner);
    await put(owner.access, lead.customerId, { email: 'x@example.com', phone: '380501234567', address: 'Somewhere' });
    const res = await put(owner.access, lead.customerId, { email: null, phone: '', address: null });
    expect(res.json()).toMatchObject({ email: null, phone: null, address: null });
    expect(await customerRow(lead.customerId)).toMatchObject({ email: null, phone: null, address: null });
  });

  it('ignores fields other than name, phone, email and address', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner);
    const before = await customerRow(lead.customerId);
    const res = await put(owner.access, lead.customerId, {
      id: 5,
      avatar: 'https://evil.example/x.png',
      login: 'changed',
      name: 'New name',
    });
    expect(res.statusCode).toBe(200);
    expect(await customerRow(lead.customerId)).toMatchObject({
      id: before.id,
      avatar: before.avatar,
      login: before.login,
      name: 'New name',
    });
  });

  it('refuses bad input with 400 and the field in details, writing nothing, under every version', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner);
    const cases: Array<[unknown, string]> = [
      [{ email: 'not-an-email' }, 'body.email'],
      [{ email: 'a@b' }, 'body.email'],
      [{ phone: '12ab34' }, 'body.phone'],
      [{ phone: '+1234' }, 'body.phone'],
      [{ phone: '1234567890123456' }, 'body.phone'],
      [{ name: 5 }, 'body.name'],
      [{ name: 'n'.repeat(201) }, 'body.name'],
      [{ address: 'a'.repeat(1001) }, 'body.address'],
      [{ email: ['x@example.com'] }, 'body.email'],
      [{ phone: 380501234567 }, 'body.phone'],
      [{ name: null }, 'body.name'],
    ];
    const before = await snapshot();
    for (const v of ['v1.2', 'v1.3']) {
      for (const [payload, field] of cases) {
        const res = await put(owner.access, lead.customerId, payload, v);
        expect(res.statusCode, `${v} ${JSON.stringify(payload).slice(0, 60)}`).toBe(400);
        expect(res.json().details.map((d: { path: string }) => d.path)).toContain(field);
      }
    }
    const legacy = await put(owner.access, lead.customerId, { email: 'nope' }, 'v1.1');
    expect(legacy.statusCode).toBe(400);
    expect(legacy.json()).toMatchObject({ statusCode: 400 });
    // Every invalid field at once.
    const both = await put(owner.access, lead.customerId, { email: 'nope', phone: 'nope', name: 'Valid' });
    expect(both.json().details.map((d: { path: string }) => d.path)).toEqual(['body.email', 'body.phone']);
    expect(await snapshot()).toEqual(before);
  });
});

describe('POST /customers/<id>/update', () => {
  const fetched: Array<{ token: string; socialId: string }> = [];
  let mode: 'ok' | 'refuse' | 'fail' = 'ok';
  const fakeProfiles: ChannelAdapter = {
    type: 'msgrc_bot',
    async connect() {
      return { login: 'profile_bot', externalId: 'bot-1', identifier: 'bot-1', avatar: '', url: '' };
    },
    async fetchProfile(integration, socialId) {
      fetched.push({ token: integration.credentials.token!, socialId });
      if (mode === 'refuse') throw new ChannelRejectedError('user blocked the bot');
      if (mode === 'fail') throw new ChannelFailedError('provider down');
      return {
        avatar: `https://cdn.provider.example/${socialId}.jpg`,
        login: `@${socialId}`,
        profileUrl: `https://provider.example/${socialId}`,
      };
    },
    async send() {
      throw new Error('not used here');
    },
  };

  async function botCustomer(owner: SignedUp) {
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrc_bot', credentials: { token: 'profile-reader-token' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return createLead(h, owner.accountId, res.json().id, {});
  }

  it('answers the customer unchanged when no adapter can read profiles (empty JSON body accepted)', async () => {
    const owner = await h.signUp();
    const lead = await customerOf(owner);
    const before = await snapshot();
    for (const v of API_VERSIONS) {
      const res = await refresh(owner.access, lead.customerId, v);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual((await get(owner.access, lead.customerId)).json());
    }
    expect(await snapshot()).toEqual(before);
  });

  it('refreshes the avatar through the adapter (decrypted credentials, the profile’s social id) and records customer.changed', async () => {
    h.services.channels.register(fakeProfiles);
    mode = 'ok';
    const owner = await h.signUp();
    const lead = await botCustomer(owner);
    const social = (await customerRow(lead.customerId)).login;
    fetched.length = 0;
    const res = await refresh(owner.access, lead.customerId);
    expect(res.statusCode, res.body).toBe(200);
    expect(fetched).toEqual([{ token: 'profile-reader-token', socialId: social }]);
    const avatar = `https://cdn.provider.example/${social}.jpg`;
    expect(res.json().avatar).toBe(avatar);
    expect(res.json().profiles[0]).toMatchObject({ login: `@${social}`, profileUrl: `https://provider.example/${social}` });
    expect((await customerRow(lead.customerId)).avatar).toBe(avatar);
    const profile = await db().selectFrom('profiles').selectAll().where('id', '=', lead.profileId).executeTakeFirstOrThrow();
    expect(profile.avatar).toBe(avatar);

    const changed = await events(owner.accountId);
    expect(changed).toHaveLength(1);
    expect(JSON.parse(changed[0]!.payload)).toMatchObject({ customerId: lead.customerId, customer: { avatar } });

    // A second refresh with the same answer changes nothing and records nothing.
    await refresh(owner.access, lead.customerId);
    expect(await events(owner.accountId)).toHaveLength(1);
  });

  it('keeps the customer as it is when the provider refuses, and answers 502 when it fails', async () => {
    h.services.channels.register(fakeProfiles);
    const owner = await h.signUp();
    const lead = await botCustomer(owner);
    const before = await snapshot();
    mode = 'refuse';
    expect((await refresh(owner.access, lead.customerId)).statusCode).toBe(200);
    mode = 'fail';
    const failed = await refresh(owner.access, lead.customerId);
    expect(failed.statusCode).toBe(502);
    expect(failed.json().code).toBe('channel_failed');
    expect(await snapshot()).toEqual(before);
    mode = 'ok';
  });
});
