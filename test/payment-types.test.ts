import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { runRoleMatrix, type Actors } from './helpers/role-matrix.js';
import { API_VERSIONS } from '../src/api/versions.js';

let h: Harness;
let actors: Actors;
beforeAll(async () => {
  h = await createHarness();
  const owner = await h.signUp();
  actors = { owner, manager: await createManager(h, owner), other: await h.signUp() };
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const rows = (accountId: number) =>
  db().selectFrom('payment_types').selectAll().where('account_id', '=', accountId).orderBy('id').execute();

let seq = 0;
async function create(owner: SignedUp, title = `Type ${++seq}`) {
  const res = await h.request({ method: 'POST', url: '/v1.3/payment-types', token: owner.access, payload: { title } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: number; title: string };
}

describe('role matrix', () => {
  it('answers 401 without a token, 403 to managers on writes, 404 for another account’s ids', async () => {
    const { owner } = actors;
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /payment-types',
          expect: { none: 401, manager: 200, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/payment-types` }),
        },
        {
          label: 'POST /payment-types',
          expect: { none: 401, manager: 403, other: 200, owner: 200 },
          request: async (v) => ({ method: 'POST', url: `/${v}/payment-types`, payload: { title: `Cash ${v}` } }),
        },
        {
          label: 'PUT /payment-types/<id>',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({
            method: 'PUT',
            url: `/${v}/payment-types/${(await create(owner)).id}`,
            payload: { title: `Renamed ${v}` },
          }),
        },
        {
          label: 'DELETE /payment-types/<id>',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'DELETE', url: `/${v}/payment-types/${(await create(owner)).id}` }),
        },
      ],
      () => rows(owner.accountId),
    );
  });

  it('lists only the caller’s account payment types, to managers too', async () => {
    const mine = await create(actors.owner, 'Only mine');
    const managers = await h.request({ method: 'GET', url: '/v1.3/payment-types', token: actors.manager.access });
    expect(managers.json()).toContainEqual(mine);
    const theirs = await h.request({ method: 'GET', url: '/v1.3/payment-types', token: actors.other.access });
    expect(theirs.json().map((p: { id: number }) => p.id)).not.toContain(mine.id);
  });
});

describe('payment types', () => {
  it('creates, lists in creation order, renames, and answers the same shapes in every version', async () => {
    const owner = await h.signUp();
    expect((await h.request({ method: 'GET', url: '/v1.3/payment-types', token: owner.access })).json()).toEqual([]);
    const cash = await create(owner, ' Cash ');
    expect(cash).toEqual({ id: expect.any(Number), title: 'Cash' });
    const card = await create(owner, 'Card');
    const renamed = await h.request({
      method: 'PUT',
      url: `/v1.1/payment-types/${card.id}`,
      token: owner.access,
      payload: { title: 'Credit card' },
    });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toEqual({ id: card.id, title: 'Credit card' });
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'GET', url: `/${v}/payment-types`, token: owner.access });
      expect(res.json(), v).toEqual([cash, { id: card.id, title: 'Credit card' }]);
    }
  });

  it('refuses a title already used (409), a blank or missing title (400) and an unknown id (404), changing nothing', async () => {
    const owner = await h.signUp();
    const cash = await create(owner, 'Cash');
    const card = await create(owner, 'Card');
    const before = await rows(owner.accountId);
    const attempts = [
      { method: 'POST', url: '/payment-types', payload: { title: 'Cash' }, status: 409 },
      { method: 'PUT', url: `/payment-types/${card.id}`, payload: { title: 'Cash' }, status: 409 },
      { method: 'POST', url: '/payment-types', payload: { title: '   ' }, status: 400 },
      { method: 'POST', url: '/payment-types', payload: {}, status: 400 },
      { method: 'POST', url: '/payment-types', payload: { title: 5 }, status: 400 },
      { method: 'PUT', url: '/payment-types/999999', payload: { title: 'X' }, status: 404 },
      { method: 'DELETE', url: '/payment-types/999999', status: 404 },
    ] as const;
    for (const v of ['v1.2', 'v1.3']) {
      for (const a of attempts) {
        const res = await h.request({
          method: a.method,
          url: `/${v}${a.url}`,
          token: owner.access,
          payload: 'payload' in a ? a.payload : undefined,
        });
        expect(res.statusCode, `${v} ${a.method} ${a.url} ${JSON.stringify('payload' in a ? a.payload : '')}`).toBe(a.status);
      }
    }
    const legacy = await h.request({ method: 'POST', url: '/v1.1/payment-types', token: owner.access, payload: { title: 'Cash' } });
    expect(legacy.statusCode).toBe(409);
    expect(legacy.json()).toEqual({ statusCode: 409, message: expect.any(String) });
    expect(await rows(owner.accountId)).toEqual(before);
    // Keeping its own title is no conflict.
    const same = await h.request({ method: 'PUT', url: `/v1.3/payment-types/${cash.id}`, token: owner.access, payload: { title: 'Cash' } });
    expect(same.statusCode).toBe(200);
  });

  it('a non-integer id is 400 on v1.3 and 404 on v1.1 and v1.2', async () => {
    const { owner } = actors;
    expect((await h.request({ method: 'DELETE', url: '/v1.3/payment-types/abc', token: owner.access })).statusCode).toBe(400);
    for (const v of ['v1.1', 'v1.2']) {
      expect((await h.request({ method: 'DELETE', url: `/${v}/payment-types/abc`, token: owner.access })).statusCode).toBe(404);
    }
  });

  it('deleting a payment type leaves the leads that carried it without one, and answers {}', async () => {
    const owner = await h.signUp();
    const integration = await createIntegration(h, owner.accountId);
    const cash = await create(owner, 'Cash');
    const card = await create(owner, 'Card');
    const paidCash = await createLead(h, owner.accountId, integration);
    const paidCard = await createLead(h, owner.accountId, integration);
    await db().updateTable('leads').set({ payment_type_id: cash.id }).where('id', '=', paidCash.leadId).execute();
    await db().updateTable('leads').set({ payment_type_id: card.id }).where('id', '=', paidCard.leadId).execute();
    h.clock.advance(1000);

    const res = await h.request({ method: 'DELETE', url: `/v1.2/payment-types/${cash.id}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    const leads = await db()
      .selectFrom('leads')
      .select(['id', 'payment_type_id', 'updated_at'])
      .where('account_id', '=', owner.accountId)
      .orderBy('id')
      .execute();
    expect(leads).toEqual([
      { id: paidCash.leadId, payment_type_id: null, updated_at: h.clock.now() },
      { id: paidCard.leadId, payment_type_id: card.id, updated_at: h.clock.now() - 1000 },
    ]);
    expect(await rows(owner.accountId)).toEqual([{ id: card.id, account_id: owner.accountId, title: 'Card' }]);
  });
});
