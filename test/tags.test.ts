import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';
import { runRoleMatrix, type Actors } from './helpers/role-matrix.js';
import { API_VERSIONS } from '../src/api/versions.js';
import { ensureTag } from '../src/domain/tags/tags.repo.js';

let h: Harness;
let actors: Actors;
beforeAll(async () => {
  h = await createHarness();
  const owner = await h.signUp();
  actors = { owner, manager: await createManager(h, owner), other: await h.signUp() };
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const tagRows = (accountId: number) => db().selectFrom('tags').selectAll().where('account_id', '=', accountId).orderBy('id').execute();

async function seed(owner: SignedUp, tags: string[]) {
  for (const tag of tags) await ensureTag(db(), owner.accountId, tag, h.clock.now());
}

async function search(owner: SignedUp, query: string, version = 'v1.3') {
  const res = await h.request({ method: 'GET', url: `/${version}/tags${query}`, token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Array<{ id: number; tag: string }>;
}

describe('role matrix', () => {
  it('answers 401 without a token and lists the caller’s own account tags to owners and managers', async () => {
    await seed(actors.owner, ['matrix']);
    await runRoleMatrix(
      h,
      actors,
      [
        {
          label: 'GET /tags',
          expect: { none: 401, manager: 200, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/tags?search=ma` }),
        },
      ],
      () => tagRows(actors.owner.accountId),
    );
    expect((await search(actors.owner, '?search=ma')).map((t) => t.tag)).toEqual(['matrix']);
    const managers = await h.request({ method: 'GET', url: '/v1.3/tags', token: actors.manager.access });
    expect(managers.json().map((t: { tag: string }) => t.tag)).toContain('matrix');
    expect(await search(actors.other, '?search=ma')).toEqual([]);
  });
});

describe('GET /tags', () => {
  it('matches by prefix without case, sorted by tag without case', async () => {
    const owner = await h.signUp();
    await seed(owner, ['Vipassana', 'VIP', 'vip-gold', 'Urgent', 'Very late', 'avip']);
    const expected = ['VIP', 'vip-gold', 'Vipassana'];
    for (const q of ['vi', 'VI', 'Vip', 'vIP']) {
      expect(
        (await search(owner, `?search=${q}`)).map((t) => t.tag),
        q,
      ).toEqual(expected);
    }
    expect((await search(owner, '?search=v')).map((t) => t.tag)).toEqual(['Very late', 'VIP', 'vip-gold', 'Vipassana']);
    expect((await search(owner, '?search=vipa')).map((t) => t.tag)).toEqual(['Vipassana']);
    expect(await search(owner, '?search=nothing')).toEqual([]);
  });

  it('lists every tag when search is omitted or blank', async () => {
    const owner = await h.signUp();
    await seed(owner, ['b', 'C', 'a']);
    expect((await search(owner, '')).map((t) => t.tag)).toEqual(['a', 'b', 'C']);
    expect((await search(owner, '?search=')).map((t) => t.tag)).toEqual(['a', 'b', 'C']);
    expect((await search(owner, '?search=%20%20')).map((t) => t.tag)).toEqual(['a', 'b', 'C']);
  });

  it('takes % _ and \\ in the search literally', async () => {
    const owner = await h.signUp();
    await seed(owner, ['50% off', '50 percent', 'a_b', 'axb', 'back\\slash', 'backslash']);
    expect((await search(owner, `?search=${encodeURIComponent('50%')}`)).map((t) => t.tag)).toEqual(['50% off']);
    expect((await search(owner, `?search=${encodeURIComponent('a_')}`)).map((t) => t.tag)).toEqual(['a_b']);
    expect((await search(owner, `?search=${encodeURIComponent('back\\')}`)).map((t) => t.tag)).toEqual(['back\\slash']);
  });

  it('matches letters beyond ASCII without case', async () => {
    const owner = await h.signUp();
    await seed(owner, ['Ärger', 'Привет', 'apple']);
    expect((await search(owner, `?search=${encodeURIComponent('ä')}`)).map((t) => t.tag)).toEqual(['Ärger']);
    expect((await search(owner, `?search=${encodeURIComponent('пРИ')}`)).map((t) => t.tag)).toEqual(['Привет']);
  });

  it('answers the same shape in every version', async () => {
    const owner = await h.signUp();
    await seed(owner, ['Shape']);
    const v13 = await search(owner, '?search=sh');
    expect(v13).toEqual([{ id: expect.any(Number), tag: 'Shape' }]);
    for (const v of ['v1.1', 'v1.2']) expect(await search(owner, '?search=sh', v)).toEqual(v13);
  });

  it('refuses a search longer than 100 characters with 400 in each version’s error format', async () => {
    const owner = actors.owner;
    const long = 'x'.repeat(101);
    for (const v of API_VERSIONS) {
      const res = await h.request({ method: 'GET', url: `/${v}/tags?search=${long}`, token: owner.access });
      expect(res.statusCode, v).toBe(400);
      if (v === 'v1.1') expect(res.json()).toEqual({ statusCode: 400, message: expect.any(String) });
      else
        expect(res.json()).toMatchObject({
          code: 'validation_failed',
          details: [{ path: 'querystring.search', message: expect.any(String) }],
        });
    }
    expect((await h.request({ method: 'GET', url: `/v1.3/tags?search=${'x'.repeat(100)}`, token: owner.access })).statusCode).toBe(200);
  });
});

describe('ensureTag', () => {
  it('finds a tag by exact value or creates it once, per account', async () => {
    const owner = await h.signUp();
    const first = await ensureTag(db(), owner.accountId, 'Repeat', h.clock.now());
    expect(first).toMatchObject({ account_id: owner.accountId, tag: 'Repeat', tag_key: 'repeat' });
    const again = await db()
      .transaction()
      .execute((trx) => ensureTag(trx, owner.accountId, 'Repeat', h.clock.now()));
    expect(again.id).toBe(first.id);
    const otherCase = await ensureTag(db(), owner.accountId, 'repeat', h.clock.now());
    expect(otherCase.id).not.toBe(first.id);
    const elsewhere = await ensureTag(db(), actors.other.accountId, 'Repeat', h.clock.now());
    expect(elsewhere.id).not.toBe(first.id);
    expect((await tagRows(owner.accountId)).map((t) => t.tag)).toEqual(['Repeat', 'repeat']);
  });

  it('two concurrent first uses of a tag make one row', async () => {
    const owner = await h.signUp();
    const [a, b] = await Promise.all([
      db()
        .transaction()
        .execute((trx) => ensureTag(trx, owner.accountId, 'race', h.clock.now())),
      db()
        .transaction()
        .execute((trx) => ensureTag(trx, owner.accountId, 'race', h.clock.now())),
    ]);
    expect(a.id).toBe(b.id);
    expect(await tagRows(owner.accountId)).toHaveLength(1);
  });
});
