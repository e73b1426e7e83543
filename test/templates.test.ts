import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager, type ManagerFixture } from './helpers/fixtures.js';
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

interface Phrase {
  id: number;
  template: string;
  hotkey: string;
  userId: number | null;
}
interface Group {
  id: number;
  key: string;
  templates: Phrase[];
}

/** Everything a template route may change in an account. */
const snapshotOf = (accountId: number) => async () => ({
  groups: await db().selectFrom('template_groups').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
  phrases: await db().selectFrom('templates').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
});

let keySeq = 0;
async function createGroup(owner: SignedUp, key = `Group ${++keySeq}`): Promise<Group> {
  const res = await h.request({ method: 'POST', url: '/v1.3/templates', token: owner.access, payload: { key } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function addPhrase(token: string, groupId: number, body: object): Promise<Phrase> {
  const res = await h.request({ method: 'POST', url: `/v1.3/templates/${groupId}`, token, payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

async function list(token: string, version = 'v1.3'): Promise<Group[]> {
  const res = await h.request({ method: 'GET', url: `/${version}/templates`, token });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('role matrix', () => {
  it('answers 401 without a token, 403 to managers on group writes and shared phrases, 404 for another account’s ids', async () => {
    const { owner, manager } = actors;
    const group = await createGroup(owner);
    const shared = () => addPhrase(owner.access, group.id, { template: `Hello ${++keySeq}` });
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /templates',
          expect: { none: 401, manager: 200, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/templates` }),
        },
        {
          label: 'POST /templates',
          expect: { none: 401, manager: 403, other: 200, owner: 200 },
          request: async (v) => ({ method: 'POST', url: `/${v}/templates`, payload: { key: `Made on ${v}` } }),
        },
        {
          label: 'PUT /templates',
          // Another account has no group of that name: 404.
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => {
            const g = await createGroup(owner);
            return { method: 'PUT', url: `/${v}/templates`, payload: { key: g.key, newKey: `${g.key} renamed` } };
          },
        },
        {
          label: 'DELETE /templates/group?id=',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'DELETE', url: `/${v}/templates/group?id=${(await createGroup(owner)).id}` }),
        },
        {
          label: 'POST /templates/<groupId> (shared phrase)',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'POST', url: `/${v}/templates/${group.id}`, payload: { template: 'Shared', userId: null } }),
        },
        {
          label: 'PUT /templates/<groupId>/<templateId> (shared phrase)',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({
            method: 'PUT',
            url: `/${v}/templates/${group.id}/${(await shared()).id}`,
            payload: { template: 'Edited' },
          }),
        },
        {
          label: 'DELETE /templates/<groupId>/<templateId> (shared phrase)',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'DELETE', url: `/${v}/templates/${group.id}/${(await shared()).id}` }),
        },
        {
          label: 'POST /templates/<groupId> (the manager’s own phrase)',
          expect: { none: 401, manager: 200, other: 404, owner: 200 },
          request: async (v) => ({
            method: 'POST',
            url: `/${v}/templates/${group.id}`,
            payload: { template: 'Mine', userId: manager.userId },
          }),
        },
      ],
      snapshotOf(owner.accountId),
    );
  });

  it('lets a manager edit and delete its own personal phrases', async () => {
    const { owner, manager } = actors;
    const group = await createGroup(owner);
    const mine = await addPhrase(manager.access, group.id, { template: 'My phrase', hotkey: 'F2', userId: manager.userId });
    expect(mine).toEqual({ id: expect.any(Number), template: 'My phrase', hotkey: 'F2', userId: manager.userId });
    const edited = await h.request({
      method: 'PUT',
      url: `/v1.2/templates/${group.id}/${mine.id}`,
      token: manager.access,
      payload: { template: 'My better phrase' },
    });
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json()).toEqual({ ...mine, template: 'My better phrase' });
    const del = await h.request({ method: 'DELETE', url: `/v1.1/templates/${group.id}/${mine.id}`, token: manager.access });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({});
    expect(await db().selectFrom('templates').select('id').where('id', '=', mine.id).executeTakeFirst()).toBeUndefined();
  });

  it('refuses a manager writing for someone else or making its phrase shared (403), and hides others’ personal phrases (404)', async () => {
    const { owner, manager } = actors;
    const colleague: ManagerFixture = await createManager(h, owner);
    const group = await createGroup(owner);
    const theirs = await addPhrase(owner.access, group.id, { template: 'Colleague’s', userId: colleague.userId });
    const mine = await addPhrase(manager.access, group.id, { template: 'Mine', userId: manager.userId });
    const snapshot = snapshotOf(owner.accountId);
    const before = await snapshot();
    const attempts = [
      { method: 'POST', url: `/v1.3/templates/${group.id}`, payload: { template: 'For them', userId: colleague.userId }, status: 403 },
      { method: 'POST', url: `/v1.3/templates/${group.id}`, payload: { template: 'No userId' }, status: 403 },
      { method: 'PUT', url: `/v1.3/templates/${group.id}/${mine.id}`, payload: { userId: null }, status: 403 },
      { method: 'PUT', url: `/v1.3/templates/${group.id}/${mine.id}`, payload: { userId: colleague.userId }, status: 403 },
      { method: 'PUT', url: `/v1.3/templates/${group.id}/${theirs.id}`, payload: { template: 'Hijack' }, status: 404 },
      { method: 'DELETE', url: `/v1.3/templates/${group.id}/${theirs.id}`, status: 404 },
    ] as const;
    for (const a of attempts) {
      const res = await h.request({ method: a.method, url: a.url, payload: 'payload' in a ? a.payload : undefined, token: manager.access });
      expect(res.statusCode, `${a.method} ${a.url} ${JSON.stringify('payload' in a ? a.payload : '')}`).toBe(a.status);
    }
    expect(await snapshot()).toEqual(before);
  });
});

describe('personal phrase visibility', () => {
  it('each employee, the owner included, sees the shared phrases and its own personal ones', async () => {
    const owner = await h.signUp();
    const m1 = await createManager(h, owner);
    const m2 = await createManager(h, owner);
    const group = await createGroup(owner, 'Greetings');
    const shared = await addPhrase(owner.access, group.id, { template: 'Hello!', hotkey: 'h' });
    const forM1 = await addPhrase(owner.access, group.id, { template: 'Hi, m1 here', userId: m1.userId });
    const ownersOwn = await addPhrase(owner.access, group.id, { template: 'The owner speaking', userId: owner.userId });
    const m2Own = await addPhrase(m2.access, group.id, { template: 'm2 here', userId: m2.userId });
    const phrasesOf = async (token: string) => (await list(token)).find((g) => g.id === group.id)!.templates.map((p) => p.id);

    expect(await phrasesOf(owner.access)).toEqual([shared.id, ownersOwn.id]);
    expect(await phrasesOf(m1.access)).toEqual([shared.id, forM1.id]);
    expect(await phrasesOf(m2.access)).toEqual([shared.id, m2Own.id]);
    // The owner may still manage a personal phrase it cannot see in the list.
    const edit = await h.request({
      method: 'PUT',
      url: `/v1.3/templates/${group.id}/${forM1.id}`,
      token: owner.access,
      payload: { hotkey: 'F1' },
    });
    expect(edit.statusCode).toBe(200);
    expect(edit.json()).toEqual({ id: forM1.id, template: 'Hi, m1 here', hotkey: 'F1', userId: m1.userId });
  });

  it('answers the same shapes in every version; a null userId stays null on v1.1 (whose bodies are coerced)', async () => {
    const owner = await h.signUp();
    const group = await createGroup(owner, 'Shapes');
    for (const v of API_VERSIONS) {
      const res = await h.request({
        method: 'POST',
        url: `/${v}/templates/${group.id}`,
        token: owner.access,
        payload: { template: `On ${v}`, hotkey: null, userId: null },
      });
      expect(res.statusCode, `${v} ${res.body}`).toBe(200);
      expect(res.json()).toEqual({ id: expect.any(Number), template: `On ${v}`, hotkey: '', userId: null });
    }
    const v13 = await list(owner.access);
    expect(v13).toEqual([{ id: group.id, key: 'Shapes', templates: expect.any(Array) }]);
    expect(v13[0].templates).toHaveLength(3);
    for (const p of v13[0].templates) expect(Object.keys(p).sort()).toEqual(['hotkey', 'id', 'template', 'userId']);
    for (const v of ['v1.1', 'v1.2']) expect(await list(owner.access, v)).toEqual(v13);
  });
});

describe('groups', () => {
  it('creates a group (answers it with no phrases) and refuses a key already used (409), changing nothing', async () => {
    const owner = await h.signUp();
    const group = await createGroup(owner, '  Delivery ');
    expect(group).toEqual({ id: expect.any(Number), key: 'Delivery', templates: [] });
    const before = await snapshotOf(owner.accountId)();
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'POST', url: `/${v}/templates`, token: owner.access, payload: { key: 'Delivery' } });
      expect(res.statusCode, v).toBe(409);
    }
    const blank = await h.request({ method: 'POST', url: '/v1.3/templates', token: owner.access, payload: { key: '  ' } });
    expect(blank.statusCode).toBe(400);
    expect(await snapshotOf(owner.accountId)()).toEqual(before);
  });

  it('renames a group by key: unknown key 404, a taken new key 409, both changing nothing', async () => {
    const owner = await h.signUp();
    const a = await createGroup(owner, 'A');
    await createGroup(owner, 'B');
    await addPhrase(owner.access, a.id, { template: 'In A' });
    const before = await snapshotOf(owner.accountId)();
    const unknown = await h.request({ method: 'PUT', url: '/v1.3/templates', token: owner.access, payload: { key: 'Nope', newKey: 'C' } });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('not_found');
    const taken = await h.request({ method: 'PUT', url: '/v1.1/templates', token: owner.access, payload: { key: 'A', newKey: 'B' } });
    expect(taken.statusCode).toBe(409);
    expect(taken.json()).toEqual({ statusCode: 409, message: expect.any(String) });
    expect(await snapshotOf(owner.accountId)()).toEqual(before);

    const ok = await h.request({ method: 'PUT', url: '/v1.2/templates', token: owner.access, payload: { key: 'A', newKey: 'Aa' } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ id: a.id, key: 'Aa', templates: [{ template: 'In A' }] });
    expect((await list(owner.access)).map((g) => g.key)).toEqual(['Aa', 'B']);
  });

  it('deletes a group with all its phrases, personal ones included', async () => {
    const owner = await h.signUp();
    const m = await createManager(h, owner);
    const doomed = await createGroup(owner, 'Doomed');
    const kept = await createGroup(owner, 'Kept');
    await addPhrase(owner.access, doomed.id, { template: 'one' });
    await addPhrase(m.access, doomed.id, { template: 'two', userId: m.userId });
    const survivor = await addPhrase(owner.access, kept.id, { template: 'three' });
    const res = await h.request({ method: 'DELETE', url: `/v1.3/templates/group?id=${doomed.id}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({});
    const { groups, phrases } = await snapshotOf(owner.accountId)();
    expect(groups.map((g) => g.id)).toEqual([kept.id]);
    expect(phrases.map((p) => p.id)).toEqual([survivor.id]);
    const again = await h.request({ method: 'DELETE', url: `/v1.3/templates/group?id=${doomed.id}`, token: owner.access });
    expect(again.statusCode).toBe(404);
    const noId = await h.request({ method: 'DELETE', url: '/v1.3/templates/group', token: owner.access });
    expect(noId.statusCode).toBe(400);
  });
});

describe('phrases', () => {
  it('a phrase for an unknown group is 404 and writes nothing; so is another account’s group', async () => {
    const owner = await h.signUp();
    const foreign = await createGroup(actors.other);
    const before = await snapshotOf(owner.accountId)();
    for (const v of API_VERSIONS) {
      for (const groupId of [999999, foreign.id]) {
        const res = await h.request({
          method: 'POST',
          url: `/${v}/templates/${groupId}`,
          token: owner.access,
          payload: { template: 'Lost' },
        });
        expect(res.statusCode, `${v} ${groupId}`).toBe(404);
        if (v === 'v1.1') expect(res.json()).toEqual({ statusCode: 404, message: 'Template group not found' });
        else expect(res.json()).toMatchObject({ code: 'not_found', error: 'Template group not found' });
      }
    }
    expect(await snapshotOf(owner.accountId)()).toEqual(before);
    expect(await db().selectFrom('templates').select('id').where('group_id', '=', foreign.id).execute()).toEqual([]);
  });

  it('a userId that is no employee of the account is 400 and writes nothing', async () => {
    const owner = await h.signUp();
    const group = await createGroup(owner);
    const before = await snapshotOf(owner.accountId)();
    for (const userId of [actors.other.userId, 999999]) {
      const res = await h.request({
        method: 'POST',
        url: `/v1.3/templates/${group.id}`,
        token: owner.access,
        payload: { template: 'x', userId },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().details).toEqual([{ path: 'body.userId', message: expect.any(String) }]);
    }
    const badType = await h.request({
      method: 'POST',
      url: `/v1.3/templates/${group.id}`,
      token: owner.access,
      payload: { template: 'x', userId: 'me' },
    });
    expect(badType.statusCode).toBe(400);
    const missing = await h.request({ method: 'POST', url: `/v1.3/templates/${group.id}`, token: owner.access, payload: { hotkey: 'x' } });
    expect(missing.statusCode).toBe(400);
    expect(await snapshotOf(owner.accountId)()).toEqual(before);
  });

  it('an edit keeps absent fields, userId null makes a phrase shared, and a phrase of another group is 404', async () => {
    const owner = await h.signUp();
    const m = await createManager(h, owner);
    const group = await createGroup(owner);
    const other = await createGroup(owner);
    const p = await addPhrase(owner.access, group.id, { template: 'Personal', hotkey: 'P', userId: m.userId });
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/templates/${group.id}/${p.id}`,
      token: owner.access,
      payload: { userId: null },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ id: p.id, template: 'Personal', hotkey: 'P', userId: null });
    const wrongGroup = await h.request({
      method: 'PUT',
      url: `/v1.3/templates/${other.id}/${p.id}`,
      token: owner.access,
      payload: { template: 'x' },
    });
    expect(wrongGroup.statusCode).toBe(404);
    const wrongDelete = await h.request({ method: 'DELETE', url: `/v1.3/templates/${other.id}/${p.id}`, token: owner.access });
    expect(wrongDelete.statusCode).toBe(404);
    const stored = await db().selectFrom('templates').selectAll().where('id', '=', p.id).executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ group_id: group.id, template: 'Personal', hotkey: 'P', user_id: null });
  });

  it('path ids: a non-integer is 400 on v1.3 and 404 on v1.1 and v1.2', async () => {
    const owner = actors.owner;
    const group = await createGroup(owner);
    expect(
      (await h.request({ method: 'POST', url: '/v1.3/templates/abc', token: owner.access, payload: { template: 'x' } })).statusCode,
    ).toBe(400);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/templates/${group.id}/x`, token: owner.access })).statusCode).toBe(400);
    for (const v of ['v1.1', 'v1.2']) {
      expect(
        (await h.request({ method: 'POST', url: `/${v}/templates/abc`, token: owner.access, payload: { template: 'x' } })).statusCode,
      ).toBe(404);
      expect((await h.request({ method: 'DELETE', url: `/${v}/templates/${group.id}/x`, token: owner.access })).statusCode).toBe(404);
    }
  });
});
