import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createManager } from './helpers/fixtures.js';
import { normalizePhone } from '../src/domain/customers/phone.js';
import { migrateToLatest } from '../src/db/migrate.js';

// Phones in one form (docs/api/search.md "Phones"), on both databases.
let h: Harness;
let owner: SignedUp;
let saId: number;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  saId = await createIntegration(h, owner.accountId, 'msgrb_bot');
});
afterAll(() => h.close());

const settings = (method: 'GET' | 'PUT', payload?: object, token = owner.access) =>
  h.request({ method, url: '/v1.3/account/me/settings', payload, token });
const newLead = async (name: string, phone: string) => {
  const res = await h.request({ method: 'POST', url: '/v1.3/leads', payload: { saId, customer: { name, phone } }, token: owner.access });
  expect(res.statusCode).toBe(200);
  const lead = await h.database.db.kysely
    .selectFrom('leads')
    .select('customer_id')
    .where('id', '=', res.json().id)
    .executeTakeFirstOrThrow();
  return h.database.db.kysely.selectFrom('customers').selectAll().where('id', '=', lead.customer_id).executeTakeFirstOrThrow();
};
const found = async (q: string) => {
  const res = await h.request({ method: 'POST', url: '/v1.3/search/customers', payload: { q }, token: owner.access });
  expect(res.statusCode).toBe(200);
  return res.json().leads.map((l: { customer: { name: string } }) => l.customer.name);
};

describe('normalizePhone', () => {
  it('reads every usual form of a Russian number as one E.164 number', () => {
    for (const typed of ['+7 916 123-45-67', '8 (916) 123-45-67', '79161234567', '9161234567', '+79161234567', '+7 (916) 123-45-67']) {
      expect(normalizePhone(typed, 'RU'), typed).toEqual({ phone: '+79161234567', asTyped: typed, parsed: true });
    }
    expect(normalizePhone('+44 20 7946 0958', 'RU').phone).toBe('+442079460958');
    expect(normalizePhone('030 12345678', 'DE').phone).toBe('+493012345678');
    // Without its country code a number is read in the default country: the same digits differ.
    expect(normalizePhone('79161234567', 'DE').phone).not.toBe('+79161234567');
    expect(normalizePhone('12345', 'RU')).toEqual({ phone: '12345', asTyped: '12345', parsed: false });
  });
});

describe('the defaultCountry setting', () => {
  it('is RU until the owner sets another; unknown keys and bad values are 400 with their path and change nothing', async () => {
    expect((await settings('GET')).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
    const unknown = await settings('PUT', { typo: 1 });
    expect(unknown.statusCode).toBe(400);
    expect(JSON.stringify(unknown.json())).toContain('typo');
    for (const bad of ['XX', 'ru', 'RUS', '', 7, null, 'R\u0000']) {
      const res = await settings('PUT', { defaultCountry: bad });
      expect(res.statusCode, String(bad)).toBe(400);
      expect(JSON.stringify(res.json())).toContain('defaultCountry');
    }
    const manager = await createManager(h, owner);
    expect((await settings('GET', undefined, manager.access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
    expect((await settings('PUT', { defaultCountry: 'KZ' }, manager.access)).statusCode).toBe(403);
    expect((await settings('GET')).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
    const other = await h.signUp();
    expect((await settings('PUT', { defaultCountry: 'DE' }, other.access)).json()).toEqual({ typeNames: 'api', defaultCountry: 'DE' });
    expect((await settings('GET')).json()).toEqual({ typeNames: 'api', defaultCountry: 'RU' });
  });
});

describe('stored phones', () => {
  it("stores a lead's customer phone in E.164 and keeps what was typed", async () => {
    const c = await newLead('Lead Phone', '8 (903) 555-12-34');
    expect(c.phone).toBe('+79035551234');
    expect(c.phone_as_typed).toBe('8 (903) 555-12-34');
    const res = await h.request({ method: 'GET', url: `/v1.3/customers/${c.id}`, token: owner.access });
    expect(res.json().phone).toBe('+79035551234');
  });

  it('stores PUT /customers phones in E.164, another country as its own, an unparsable one as typed', async () => {
    const c = await newLead('Put Phone', '+7 916 000-00-01');
    const put = (phone: string) => h.request({ method: 'PUT', url: `/v1.3/customers/${c.id}`, payload: { phone }, token: owner.access });
    expect((await put('8 (916) 123-45-67')).json().phone).toBe('+79161234567');
    expect((await put('+44 20 7946 0958')).json().phone).toBe('+442079460958');
    expect((await put('12345')).json().phone).toBe('12345');
    expect((await put('not a phone')).statusCode).toBe(400);
  });

  it("reads numbers without a country code in the account's default country", async () => {
    const other = await h.signUp();
    await settings('PUT', { defaultCountry: 'DE' }, other.access);
    const sa = await createIntegration(h, other.accountId, 'msgrb_bot');
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      payload: { saId: sa, customer: { name: 'Berlin', phone: '030 12345678' } },
      token: other.access,
    });
    const lead = await h.database.db.kysely
      .selectFrom('leads')
      .select('customer_id')
      .where('id', '=', res.json().id)
      .executeTakeFirstOrThrow();
    const c = await h.database.db.kysely
      .selectFrom('customers')
      .select('phone')
      .where('id', '=', lead.customer_id)
      .executeTakeFirstOrThrow();
    expect(c.phone).toBe('+493012345678');
  });

  it('fills the phone of a WhatsApp sender from its id', async () => {
    const sa = await createIntegration(h, owner.accountId, 'msgra');
    const integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', sa).executeTakeFirstOrThrow();
    const r = await h.services.ingest.ingest(integration, {
      externalId: 'wa-1',
      datetime: h.clock.now(),
      sender: { socialId: '79167654321', name: 'WA Person' },
      channel: { externalId: '79167654321', type: 'message' },
      text: 'hi',
    });
    const lead = await h.database.db.kysely.selectFrom('leads').select('customer_id').where('id', '=', r.leadId).executeTakeFirstOrThrow();
    const c = await h.database.db.kysely
      .selectFrom('customers')
      .select(['phone', 'phone_as_typed'])
      .where('id', '=', lead.customer_id)
      .executeTakeFirstOrThrow();
    expect(c).toEqual({ phone: '+79167654321', phone_as_typed: '79167654321' });
  });
});

describe('customer search by phone', () => {
  it('finds the customer by every form of the number and by its last 4 to 10 digits', async () => {
    await newLead('Виджет Гость', '+7 (916) 123-45-99');
    for (const q of ['+7 (916) 123-45-99', '89161234599', '79161234599', '+79161234599', '9161234599', '123-45-99', '1234599', '4599']) {
      expect(await found(q), q).toEqual(['Виджет Гость']);
    }
    expect(await found('89161234598')).toEqual([]);
  });
});

describe('migration 0106 on phones stored before it', () => {
  it('normalizes them, keeps what was typed, and finds them by their last digits', async () => {
    const old = await createHarness({ migrateTo: '0105-search-text' });
    try {
      const user = await old.services.accounts.createWithOwner({
        login: 'old-phones@example.com',
        pass: 'correct horse battery',
        name: 'Old',
      });
      const sa = await createIntegration(old, user.account_id, 'msgrb_bot');
      const db = old.database.db.kysely;
      const now = old.clock.now();
      const insert = (name: string, phone: string) =>
        db
          .insertInto('customers')
          .values({ account_id: user.account_id, name, phone, created_at: now, updated_at: now })
          .returning('id')
          .executeTakeFirstOrThrow();
      const ru = await insert('Старый Номер', '8 (916) 111-22-33');
      const junk = await insert('Junk Number', '12345');
      for (const c of [ru, junk]) {
        await db
          .insertInto('leads')
          .values({
            account_id: user.account_id,
            integration_id: sa,
            customer_id: c.id,
            status_type: 'inbox',
            last_message_at: now,
            created_at: now,
            updated_at: now,
          })
          .execute();
      }
      await migrateToLatest(old.database.db);
      const rows = await db.selectFrom('customers').select(['name', 'phone', 'phone_as_typed']).orderBy('id').execute();
      expect(rows).toEqual([
        { name: 'Старый Номер', phone: '+79161112233', phone_as_typed: '8 (916) 111-22-33' },
        { name: 'Junk Number', phone: '12345', phone_as_typed: '12345' },
      ]);
      const login = await old.request({
        method: 'POST',
        url: '/v1.3/auth/login',
        payload: { login: 'old-phones@example.com', pass: 'correct horse battery' },
      });
      const res = await old.request({
        method: 'POST',
        url: '/v1.3/search/customers',
        payload: { q: '111-22-33' },
        token: login.json().accessToken.token,
      });
      expect(res.json().leads.map((l: { customer: { name: string } }) => l.customer.name)).toEqual(['Старый Номер']);
    } finally {
      await old.close();
    }
  });
});
