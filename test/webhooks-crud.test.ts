import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import { createManager, type ManagerFixture } from './helpers/fixtures.js';
import { runRoleMatrix, type MatrixCase } from './helpers/role-matrix.js';
import type { ApiVersion } from '../src/api/versions.js';

let h: Harness; // private targets refused (production default)
let open: Harness; // PARLEY_WEBHOOK_ALLOW_PRIVATE=1
beforeAll(async () => {
  h = await createHarness();
  open = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
});
afterAll(async () => {
  await h.close();
  await open.close();
});

const count = (hh: Harness, accountId: number) =>
  hh.database.db.kysely.selectFrom('webhooks').selectAll().where('account_id', '=', accountId).execute();

describe('webhook CRUD', () => {
  it('creates, lists, changes and deletes, with and without the trailing slash', async () => {
    const owner = await open.signUp();
    const created = await open.request({
      method: 'POST',
      url: '/v1.3/webhooks/',
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/hook', name: 'CRM' },
    });
    expect(created.statusCode).toBe(200);
    const hook = created.json();
    expect(hook).toEqual({
      id: expect.any(Number),
      url: 'http://127.0.0.1:9/hook',
      name: 'CRM',
      status: 1,
      events: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]+=*$/),
    });
    expect(Buffer.from(hook.secret.slice(6), 'base64').length).toBe(24);

    const list = await open.request({ method: 'GET', url: '/v1.3/webhooks', token: owner.access });
    expect(list.json()).toEqual([hook]);
    const list2 = await open.request({ method: 'GET', url: '/v1.2/webhooks/', token: owner.access });
    expect(list2.json()).toEqual([hook]);

    const put = await open.request({
      method: 'PUT',
      url: `/v1.3/webhooks/${hook.id}/`,
      token: owner.access,
      payload: { status: 0, events: ['lead.created', 'message.incoming'], name: 'n2' },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ ...hook, status: 0, name: 'n2', events: ['lead.created', 'message.incoming'] });
    const put2 = await open.request({
      method: 'PUT',
      url: `/v1.2/webhooks/${hook.id}`,
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/other', events: null },
    });
    expect(put2.json()).toMatchObject({ url: 'http://127.0.0.1:9/other', events: null, secret: hook.secret });

    const del = await open.request({ method: 'DELETE', url: `/v1.3/webhooks/${hook.id}/`, token: owner.access });
    expect(del.statusCode).toBe(200);
    expect(await count(open, owner.accountId)).toEqual([]);
    const again = await open.request({ method: 'DELETE', url: `/v1.3/webhooks/${hook.id}`, token: owner.access });
    expect(again.statusCode).toBe(404);
  });

  it('limits webhooks per account by version: 1 through v1.1, 10 otherwise (409 limit_reached)', async () => {
    const owner = await open.signUp();
    const post = (v: ApiVersion, n: number) =>
      open.request({ method: 'POST', url: `/${v}/webhooks`, token: owner.access, payload: { url: `http://127.0.0.1:9/h${n}` } });
    expect((await post('v1.1', 0)).statusCode).toBe(200);
    const second = await post('v1.1', 1);
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ statusCode: 409 });
    for (let i = 1; i < 10; i++) expect((await post('v1.2', i)).statusCode).toBe(200);
    const eleventh = await post('v1.3', 10);
    expect(eleventh.statusCode).toBe(409);
    expect(eleventh.json()).toMatchObject({ code: 'limit_reached' });
    expect(await count(open, owner.accountId)).toHaveLength(10);
  });

  it('refuses a duplicate url with "This server already exists" (v1.1: legacy body)', async () => {
    const owner = await open.signUp();
    const body = { url: 'http://127.0.0.1:9/dup' };
    expect((await open.request({ method: 'POST', url: '/v1.3/webhooks', token: owner.access, payload: body })).statusCode).toBe(200);
    const dup = await open.request({ method: 'POST', url: '/v1.3/webhooks', token: owner.access, payload: body });
    expect(dup.statusCode).toBe(409);
    expect(dup.json()).toMatchObject({ error: 'This server already exists', code: 'conflict' });
    await open.request({ method: 'DELETE', url: `/v1.3/webhooks/${(await count(open, owner.accountId))[0].id}`, token: owner.access });
    await open.request({ method: 'POST', url: '/v1.1/webhooks', token: owner.access, payload: body });
    // v1.1 allows one webhook; remove it to test the duplicate on v1.1 via PUT of another one.
    const other = await open.signUp();
    await open.request({ method: 'POST', url: '/v1.1/webhooks', token: other.access, payload: body });
    const dup11 = await open.request({
      method: 'POST',
      url: '/v1.2/webhooks',
      token: other.access,
      payload: { url: 'http://127.0.0.1:9/x' },
    });
    const id = dup11.json().id;
    const put = await open.request({ method: 'PUT', url: `/v1.1/webhooks/${id}`, token: other.access, payload: body });
    expect(put.statusCode).toBe(409);
    expect(put.json()).toEqual({ statusCode: 409, message: 'This server already exists' });
    // Another account may register the same url.
    expect((await count(open, other.accountId)).map((w) => w.url).sort()).toEqual(['http://127.0.0.1:9/dup', 'http://127.0.0.1:9/x']);
  });

  it('refuses bad urls and unknown event names with 400, storing nothing', async () => {
    const owner = await h.signUp();
    const bad = [
      { url: 'ftp://example.com/hook' },
      { url: 'javascript:alert(1)' },
      { url: 'not a url' },
      { url: 'https://user:pass@example.com/hook' },
      { url: 'http://127.0.0.1:8080/hook' },
      { url: 'http://localhost:8080/hook' }, // a hostname that resolves to 127.0.0.1
      { url: 'http://[::1]/hook' },
      { url: 'http://[::ffff:127.0.0.1]/hook' },
      { url: 'http://10.0.0.5/hook' },
      { url: 'http://192.168.1.1/hook' },
      { url: 'http://169.254.169.254/latest/meta-data' },
      { url: 'http://0.0.0.0/hook' },
      { url: 'http://2130706433/hook' }, // 127.0.0.1 spelled as an integer
      { url: 'http://93.184.215.14/hook', events: ['lead.created', 'lead.exploded'] },
      { url: 'http://93.184.215.14/hook', events: 'lead.created' },
    ];
    for (const payload of bad) {
      const res = await h.request({ method: 'POST', url: '/v1.3/webhooks', token: owner.access, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect(await count(h, owner.accountId)).toEqual([]);
    // A public literal address passes (no request is made at registration).
    const ok = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks',
      token: owner.access,
      payload: { url: 'http://93.184.215.14/hook' },
    });
    expect(ok.statusCode).toBe(200);
    const put = await h.request({
      method: 'PUT',
      url: `/v1.3/webhooks/${ok.json().id}`,
      token: owner.access,
      payload: { url: 'http://localhost/x' },
    });
    expect(put.statusCode).toBe(400);
    expect((await count(h, owner.accountId))[0].url).toBe('http://93.184.215.14/hook');
  });

  it('is owner-only on every version (role matrix)', async () => {
    const owner = await open.signUp();
    const other = await open.signUp();
    const manager: ManagerFixture = await createManager(open, owner);
    const actors = { owner, manager, other };
    let n = 0;
    const fresh = async () => {
      const res = await open.request({
        method: 'POST',
        url: '/v1.3/webhooks',
        token: owner.access,
        payload: { url: `http://127.0.0.1:9/m${++n}` },
      });
      return res.json().id as number;
    };
    await runRoleMatrix(
      open,
      actors,
      [
        {
          label: 'GET /webhooks',
          expect: { none: 401, manager: 403, other: 200, owner: 200 },
          request: async (v) => ({ method: 'GET', url: `/${v}/webhooks` }),
        },
        {
          label: 'PUT /webhooks/:id',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'PUT', url: `/${v}/webhooks/${await fresh()}`, payload: { name: 'x' } }),
        },
        {
          label: 'DELETE /webhooks/:id',
          expect: { none: 401, manager: 403, other: 404, owner: 200 },
          request: async (v) => ({ method: 'DELETE', url: `/${v}/webhooks/${await fresh()}` }),
        },
      ] satisfies MatrixCase[],
      async () => (await count(open, owner.accountId)).map((w) => [w.id, w.name]),
    );
    const asManager = await open.request({
      method: 'POST',
      url: '/v1.3/webhooks',
      token: manager.access,
      payload: { url: 'http://127.0.0.1:9/mgr' },
    });
    expect(asManager.statusCode).toBe(403);
    const id = await fresh();
    for (const [token, status] of [
      [undefined, 401],
      [manager.access, 403],
      [other.access, 404],
      [owner.access, 200],
    ] as const) {
      const res = await open.request({ method: 'GET', url: `/v1.3/webhooks/${id}/deliveries`, token });
      expect(res.statusCode).toBe(status);
    }
    expect((await open.request({ method: 'GET', url: `/v1.2/webhooks/${id}/deliveries`, token: owner.access })).statusCode).toBe(404);
  });

  it('v1.3 answers 400 for a non-integer id, v1.1/v1.2 404', async () => {
    const owner = await open.signUp();
    expect((await open.request({ method: 'PUT', url: '/v1.3/webhooks/abc', token: owner.access, payload: {} })).statusCode).toBe(400);
    expect((await open.request({ method: 'PUT', url: '/v1.2/webhooks/abc', token: owner.access, payload: {} })).statusCode).toBe(404);
  });
});
