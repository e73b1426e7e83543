import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { runRoleMatrix, type Actors } from './helpers/role-matrix.js';
import { API_VERSIONS } from '../src/api/versions.js';
import type { StatusType } from '../src/db/schema.js';

let h: Harness;
let actors: Actors;
beforeAll(async () => {
  h = await createHarness();
  const owner = await h.signUp();
  actors = { owner, manager: await createManager(h, owner), other: await h.signUp() };
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

async function statusRows(accountId: number) {
  return db().selectFrom('statuses').selectAll().where('account_id', '=', accountId).orderBy('id').execute();
}

async function leadRows(accountId: number) {
  return db().selectFrom('leads').select(['id', 'status_id', 'status_type']).where('account_id', '=', accountId).orderBy('id').execute();
}

/** Everything a status route may change in an account. */
const snapshotOf = (accountId: number) => async () => ({ statuses: await statusRows(accountId), leads: await leadRows(accountId) });

async function createStatus(owner: SignedUp, body: { name: string; type: StatusType; order?: number; color?: string }) {
  const res = await h.request({ method: 'POST', url: '/v1.3/statuses', token: owner.access, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: number; name: string; order: number; type: StatusType; color: string };
}

async function listStatuses(owner: SignedUp, version = 'v1.3') {
  const res = await h.request({ method: 'GET', url: `/${version}/statuses`, token: owner.access });
  expect(res.statusCode).toBe(200);
  return res.json() as Array<{ id: number; name: string; order: number; type: StatusType; color: string }>;
}

describe('default statuses', () => {
  it('a new account has statuses of every type, listed by type then order, the same in every version', async () => {
    const owner = await h.signUp();
    const v13 = await listStatuses(owner);
    expect(v13.map((s) => [s.type, s.name, s.order])).toEqual([
      ['active', 'New', 1],
      ['active', 'In progress', 2],
      ['completed', 'Won', 1],
      ['failed', 'Lost', 1],
      ['ignore', 'Not a lead', 1],
    ]);
    for (const s of v13) {
      expect(Object.keys(s).sort()).toEqual(['color', 'id', 'name', 'order', 'type']);
      expect(s.color).toMatch(/^#[0-9a-f]{6}$/);
    }
    expect(new Set(v13.map((s) => s.type))).toEqual(new Set(['active', 'completed', 'failed', 'ignore']));
    for (const v of ['v1.1', 'v1.2']) expect(await listStatuses(owner, v)).toEqual(v13);
    // Seeded in the database for this account only.
    expect((await statusRows(owner.accountId)).map((r) => r.id).sort()).toEqual(v13.map((s) => s.id).sort());
  });
});

describe('role matrix', () => {
  it('answers 401 without a token, 403 to managers on writes, 404 for another account’s ids', async () => {
    const { owner } = actors;
    const fresh = (type: StatusType = 'active') => createStatus(owner, { name: `S ${Math.random().toString(36).slice(2)}`, type });
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /statuses',
          expect: { none: 401, manager: 200, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/statuses` }),
        },
        {
          label: 'POST /statuses',
          expect: { none: 401, manager: 403, other: 200, owner: 200 },
          request: async (v) => ({ method: 'POST', url: `/${v}/statuses`, payload: { name: `Made ${v}`, type: 'failed', order: 5 } }),
        },
        {
          label: 'PUT /statuses/<id>',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'PUT', url: `/${v}/statuses/${(await fresh()).id}`, payload: { name: `Renamed ${v}` } }),
        },
        {
          label: 'PUT /statuses/reorder',
          // Ids of another account are not statuses of the caller's account: 400 (and nothing moves).
          expect: { none: 401, manager: 403, other: 400, owner: 200 },
          request: async (v) => {
            const [a, b] = [await fresh('ignore'), await fresh('ignore')];
            return {
              method: 'PUT',
              url: `/${v}/statuses/reorder`,
              payload: [
                { id: a.id, order: 9 },
                { id: b.id, order: 8 },
              ],
            };
          },
        },
        {
          label: 'DELETE /statuses/<id>',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'DELETE', url: `/${v}/statuses/${(await fresh()).id}` }),
        },
      ],
      snapshotOf(owner.accountId),
    );
  });

  it('lists only the caller’s account statuses', async () => {
    const mine = await createStatus(actors.owner, { name: 'Mine only', type: 'active' });
    const theirs = await listStatuses(actors.other);
    expect(theirs.map((s) => s.id)).not.toContain(mine.id);
    const managers = await h.request({ method: 'GET', url: '/v1.2/statuses', token: actors.manager.access });
    expect(managers.json().map((s: { id: number }) => s.id)).toContain(mine.id);
  });
});

describe('POST /statuses', () => {
  it('creates a status; without order it goes after the last of its type, without color it gets the type’s color', async () => {
    const owner = await h.signUp();
    const created = await createStatus(owner, { name: '  Paid  ', type: 'completed' });
    expect(created).toEqual({ id: expect.any(Number), name: 'Paid', order: 2, type: 'completed', color: '#22c55e' });
    const placed = await createStatus(owner, { name: 'Urgent', type: 'active', order: 0, color: '#ABCDEF' });
    expect(placed).toMatchObject({ order: 0, color: '#ABCDEF' });
    const list = await listStatuses(owner);
    expect(list.filter((s) => s.type === 'active').map((s) => s.name)).toEqual(['Urgent', 'New', 'In progress']);
    expect(list.filter((s) => s.type === 'completed').map((s) => s.name)).toEqual(['Won', 'Paid']);
  });

  it('refuses a name already used within the type (409) and changes nothing; another type may use it', async () => {
    const owner = await h.signUp();
    const before = await statusRows(owner.accountId);
    for (const v of API_VERSIONS) {
      const res = await h.request({
        method: 'POST',
        url: `/${v}/statuses`,
        token: owner.access,
        payload: { name: 'Won ', type: 'completed', order: 3 },
      });
      expect(res.statusCode, v).toBe(409);
      if (v === 'v1.1') expect(res.json()).toEqual({ statusCode: 409, message: expect.any(String) });
      else expect(res.json()).toMatchObject({ code: 'conflict', error: expect.stringContaining('Won') });
    }
    expect(await statusRows(owner.accountId)).toEqual(before);
    expect((await createStatus(owner, { name: 'Won', type: 'failed' })).type).toBe('failed');
  });

  it('answers 400 for a missing or blank name, an unknown type, a bad color or order, and changes nothing', async () => {
    const owner = await h.signUp();
    const before = await statusRows(owner.accountId);
    const bad = [
      { type: 'active' },
      { name: '   ', type: 'active' },
      { name: 'X', type: 'archived' },
      { name: 'X', type: 'active', color: 'red; background: url(x)' },
      { name: 'X', type: 'active', order: -1 },
      { name: 'X', type: 'active', order: 'first' },
      { name: 'x'.repeat(101), type: 'active' },
    ];
    for (const payload of bad) {
      const res = await h.request({ method: 'POST', url: '/v1.3/statuses', token: owner.access, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    const legacy = await h.request({
      method: 'POST',
      url: '/v1.1/statuses',
      token: owner.access,
      payload: { name: 'X', type: 'archived' },
    });
    expect(legacy.statusCode).toBe(400);
    expect(Object.keys(legacy.json()).sort()).toEqual(['message', 'statusCode']);
    expect(await statusRows(owner.accountId)).toEqual(before);
  });
});

describe('PUT /statuses/<id>', () => {
  it('changes name and color only; order in the body is ignored and the same type is accepted', async () => {
    const owner = await h.signUp();
    const s = await createStatus(owner, { name: 'Waiting', type: 'active', order: 7 });
    const res = await h.request({
      method: 'PUT',
      url: `/v1.2/statuses/${s.id}`,
      token: owner.access,
      payload: { name: 'Waiting for payment', color: 'teal', order: 1, type: 'active' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ id: s.id, name: 'Waiting for payment', order: 7, type: 'active', color: 'teal' });
    expect((await listStatuses(owner)).find((x) => x.id === s.id)).toEqual(res.json());
  });

  it('answers 409 for a different type and changes nothing', async () => {
    const owner = await h.signUp();
    const s = await createStatus(owner, { name: 'Maybe', type: 'active' });
    const before = await statusRows(owner.accountId);
    for (const v of API_VERSIONS) {
      const res = await h.request({
        method: 'PUT',
        url: `/${v}/statuses/${s.id}`,
        token: owner.access,
        payload: { name: 'Changed', type: 'completed' },
      });
      expect(res.statusCode, v).toBe(409);
    }
    expect(await statusRows(owner.accountId)).toEqual(before);
  });

  it('answers 409 for a name another status of the type has, and 404 for an unknown id', async () => {
    const owner = await h.signUp();
    const s = await createStatus(owner, { name: 'Second', type: 'active' });
    const before = await statusRows(owner.accountId);
    const dup = await h.request({ method: 'PUT', url: `/v1.3/statuses/${s.id}`, token: owner.access, payload: { name: 'New' } });
    expect(dup.statusCode).toBe(409);
    const same = await h.request({ method: 'PUT', url: `/v1.3/statuses/${s.id}`, token: owner.access, payload: { name: 'Second' } });
    expect(same.statusCode).toBe(200);
    const missing = await h.request({ method: 'PUT', url: '/v1.3/statuses/999999', token: owner.access, payload: { name: 'Y' } });
    expect(missing.statusCode).toBe(404);
    expect(await statusRows(owner.accountId)).toEqual(before);
  });

  it('a non-integer id is 400 on v1.3 and 404 on v1.1 and v1.2', async () => {
    const owner = actors.owner;
    const v13 = await h.request({ method: 'PUT', url: '/v1.3/statuses/abc', token: owner.access, payload: { name: 'Y' } });
    expect(v13.statusCode).toBe(400);
    for (const v of ['v1.1', 'v1.2']) {
      const res = await h.request({ method: 'PUT', url: `/${v}/statuses/abc`, token: owner.access, payload: { name: 'Y' } });
      expect(res.statusCode, v).toBe(404);
    }
    const del = await h.request({ method: 'DELETE', url: '/v1.3/statuses/1.5', token: owner.access });
    expect(del.statusCode).toBe(400);
  });
});

describe('PUT /statuses/reorder', () => {
  it('reaches the reorder handler on every version and answers the statuses of that type, sorted', async () => {
    const owner = await h.signUp();
    const list = await listStatuses(owner);
    const [fresh, working] = list.filter((s) => s.type === 'active');
    const third = await createStatus(owner, { name: 'Third', type: 'active' });
    let order = 10;
    for (const v of API_VERSIONS) {
      const res = await h.request({
        method: 'PUT',
        url: `/${v}/statuses/reorder/`,
        token: owner.access,
        payload: [
          { id: third.id, order: order++ },
          { id: working.id, order: order++ },
          { id: fresh.id, order: order++ },
        ],
      });
      expect(res.statusCode, `${v} ${res.body}`).toBe(200);
      expect(res.json().map((s: { name: string }) => s.name)).toEqual(['Third', 'In progress', 'New']);
      expect(res.json().every((s: { type: string }) => s.type === 'active')).toBe(true);
    }
    const after = await listStatuses(owner);
    expect(after.filter((s) => s.type === 'active').map((s) => [s.name, s.order])).toEqual([
      ['Third', 16],
      ['In progress', 17],
      ['New', 18],
    ]);
    // Other types untouched.
    expect(after.filter((s) => s.type !== 'active')).toEqual(list.filter((s) => s.type !== 'active'));
  });

  it('leaves statuses of the type that are not listed where they are', async () => {
    const owner = await h.signUp();
    const [fresh, working] = (await listStatuses(owner)).filter((s) => s.type === 'active');
    const res = await h.request({
      method: 'PUT',
      url: '/v1.3/statuses/reorder',
      token: owner.access,
      payload: [{ id: fresh.id, order: 5 }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().map((s: { id: number; order: number }) => [s.id, s.order])).toEqual([
      [working.id, 2],
      [fresh.id, 5],
    ]);
  });

  it('answers 400 and changes nothing for mixed types, unknown or foreign ids, repeated ids and an empty list', async () => {
    const owner = await h.signUp();
    const list = await listStatuses(owner);
    const won = list.find((s) => s.type === 'completed')!;
    const [fresh, working] = list.filter((s) => s.type === 'active');
    const foreign = (await listStatuses(actors.other))[0];
    const before = await statusRows(owner.accountId);
    const cases = [
      [
        { id: fresh.id, order: 2 },
        { id: won.id, order: 1 },
      ],
      [
        { id: fresh.id, order: 2 },
        { id: 999999, order: 1 },
      ],
      [
        { id: fresh.id, order: 2 },
        { id: foreign.id, order: 1 },
      ],
      [
        { id: fresh.id, order: 2 },
        { id: fresh.id, order: 1 },
      ],
      [],
      [{ id: working.id }],
      { id: fresh.id, order: 1 },
    ];
    for (const payload of cases) {
      for (const v of API_VERSIONS) {
        const res = await h.request({ method: 'PUT', url: `/${v}/statuses/reorder`, token: owner.access, payload });
        expect(res.statusCode, `${v} ${JSON.stringify(payload)}`).toBe(400);
        if (v === 'v1.1') expect(Object.keys(res.json()).sort()).toEqual(['message', 'statusCode']);
        else expect(res.json().code).toBe('validation_failed');
      }
    }
    const mixed = await h.request({ method: 'PUT', url: '/v1.3/statuses/reorder', token: owner.access, payload: cases[0] });
    expect(mixed.json().error).toMatch(/one type/);
    expect(await statusRows(owner.accountId)).toEqual(before);
  });
});

describe('DELETE /statuses/<id>', () => {
  it('moves its leads to the first remaining status of the same type (lowest order) and answers {}', async () => {
    const owner = await h.signUp();
    const integration = await createIntegration(h, owner.accountId);
    const [fresh, working] = (await listStatuses(owner)).filter((s) => s.type === 'active');
    // Created last, but first by order: the leads go here, not to "New".
    const front = await createStatus(owner, { name: 'Front', type: 'active', order: 0 });
    const won = (await listStatuses(owner)).find((s) => s.type === 'completed')!;
    const a = await createLead(h, owner.accountId, integration, { statusId: working.id, statusType: 'active' });
    const b = await createLead(h, owner.accountId, integration, { statusId: working.id, statusType: 'active' });
    const untouched = await createLead(h, owner.accountId, integration, { statusId: won.id, statusType: 'completed' });
    const inbox = await createLead(h, owner.accountId, integration);
    h.clock.advance(60_000);

    const res = await h.request({ method: 'DELETE', url: `/v1.2/statuses/${working.id}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});

    const leads = await db().selectFrom('leads').selectAll().where('account_id', '=', owner.accountId).orderBy('id').execute();
    const byId = new Map(leads.map((l) => [l.id, l]));
    for (const moved of [a, b]) {
      expect(byId.get(moved.leadId)).toMatchObject({ status_id: front.id, status_type: 'active', updated_at: h.clock.now() });
    }
    expect(byId.get(untouched.leadId)).toMatchObject({ status_id: won.id, status_type: 'completed' });
    expect(byId.get(inbox.leadId)).toMatchObject({ status_id: null, status_type: 'inbox' });
    expect((await listStatuses(owner)).map((s) => s.id)).not.toContain(working.id);
    expect((await listStatuses(owner)).map((s) => s.id)).toContain(fresh.id);

    // Each moved lead tells subscribers of its move, once.
    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', owner.accountId)
      .where('created_at', '=', h.clock.now())
      .orderBy('id')
      .execute();
    expect(events.map((e) => [e.type, e.lead_id])).toEqual([
      ['lead.changed', a.leadId],
      ['lead.changed.status', a.leadId],
      ['lead.changed', b.leadId],
      ['lead.changed.status', b.leadId],
    ]);
    expect(JSON.parse(events[1].payload)).toMatchObject({
      statusId: front.id,
      previousStatusId: working.id,
      lead: { id: a.leadId, statusId: front.id },
    });
    expect(JSON.parse(events[0].payload)).toMatchObject({ changes: ['statusId'] });
  });

  it('moves its leads to the inbox when no status of its type remains', async () => {
    const owner = await h.signUp();
    const integration = await createIntegration(h, owner.accountId);
    const lost = (await listStatuses(owner)).find((s) => s.type === 'failed')!;
    const lead = await createLead(h, owner.accountId, integration, { statusId: lost.id, statusType: 'failed' });
    const res = await h.request({ method: 'DELETE', url: `/v1.1/statuses/${lost.id}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    const row = await db().selectFrom('leads').select(['status_id', 'status_type']).where('id', '=', lead.leadId).executeTakeFirstOrThrow();
    expect(row).toEqual({ status_id: null, status_type: 'inbox' });
    expect((await listStatuses(owner)).some((s) => s.type === 'failed')).toBe(false);
  });

  it('answers 404 for an unknown id and for one already deleted, changing nothing', async () => {
    const owner = await h.signUp();
    const s = await createStatus(owner, { name: 'Gone', type: 'ignore' });
    expect((await h.request({ method: 'DELETE', url: `/v1.3/statuses/${s.id}`, token: owner.access })).statusCode).toBe(200);
    const before = await statusRows(owner.accountId);
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'DELETE', url: `/${v}/statuses/${s.id}`, token: owner.access });
      expect(res.statusCode, v).toBe(404);
    }
    expect(await statusRows(owner.accountId)).toEqual(before);
  });
});
