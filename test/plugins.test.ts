import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';
import { sha256 } from '../src/domain/auth/token-signer.js';
import { insertUser } from '../src/domain/users/users.repo.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
});
afterAll(() => h.close());

const createPlugin = (token: string | undefined, body: object = { type: 'crm', name: 'CRM bridge' }) =>
  h.request({ method: 'POST', url: '/v1.3/plugins', payload: body, token });
const listPlugins = (token: string | undefined) => h.request({ method: 'GET', url: '/v1.3/plugins', token });
const deletePlugin = (token: string | undefined, id: number) => h.request({ method: 'DELETE', url: `/v1.3/plugins/${id}`, token });
const exchange = (pluginToken: string, manager: number | string) =>
  h.request({ method: 'POST', url: '/v1.3/auth/plugin', payload: { pluginToken, manager } });
const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });

async function newPlugin(owner: SignedUp, body?: object): Promise<{ id: number; pluginToken: string }> {
  const res = await createPlugin(owner.access, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('role matrix of the plugin routes', () => {
  it("owner 200, manager 403, other account's owner 404 on ids, no token 401", async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    const other = await h.signUp();

    expect((await listPlugins(owner.access)).statusCode).toBe(200);
    expect((await listPlugins(manager.access)).statusCode).toBe(403);
    expect((await listPlugins(undefined)).statusCode).toBe(401);

    expect((await createPlugin(owner.access)).statusCode).toBe(200);
    expect((await createPlugin(manager.access)).statusCode).toBe(403);
    expect((await createPlugin(undefined)).statusCode).toBe(401);

    const target = await newPlugin(owner);
    expect((await deletePlugin(manager.access, target.id)).statusCode).toBe(403);
    expect((await deletePlugin(undefined, target.id)).statusCode).toBe(401);
    expect((await deletePlugin(other.access, target.id)).statusCode).toBe(404);
    // Neither of those revoked it.
    expect((await exchange(target.pluginToken, owner.userId)).statusCode).toBe(200);
    expect((await deletePlugin(owner.access, target.id)).statusCode).toBe(200);

    // Lists are per account: the other owner sees none of these, and creates its own.
    expect((await listPlugins(other.access)).json()).toEqual([]);
    expect((await createPlugin(other.access)).statusCode).toBe(200);
    expect((await listPlugins(other.access)).json()).toHaveLength(1);
    expect((await listPlugins(owner.access)).json()).toHaveLength(1);
  });

  it('a manager creates nothing', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    expect((await createPlugin(manager.access)).statusCode).toBe(403);
    expect(await h.database.db.kysely.selectFrom('plugins').selectAll().where('account_id', '=', owner.accountId).execute()).toEqual([]);
  });
});

describe('plugin flow', () => {
  it('create -> exchange for an access token acting as the employee -> delete ends both tokens', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);

    const created = await createPlugin(owner.access, { type: 'crm', name: 'CRM bridge', metadata: { region: 'eu', n: 3 } });
    expect(created.statusCode).toBe(200);
    const plugin = created.json();
    expect(plugin).toEqual({
      id: expect.any(Number),
      type: 'crm',
      name: 'CRM bridge',
      metadata: { region: 'eu', n: 3 },
      status: 'active',
      pluginToken: expect.stringMatching(/^plg_[A-Za-z0-9_-]{40,}$/),
    });
    expect((await listPlugins(owner.access)).json()).toEqual([{ id: plugin.id, type: 'crm', name: 'CRM bridge', status: 'active' }]);

    const res = await exchange(plugin.pluginToken, String(manager.userId));
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json())).toEqual(['accessToken']);
    const access = res.json().accessToken;
    expect(access.exp).toBe(Math.floor(h.clock.now() / 1000) + 3600);
    expect(decodeJwt(access.token)).toMatchObject({
      typ: 'plugin',
      sub: String(manager.userId),
      accountId: owner.accountId,
      pid: plugin.id,
    });

    const who = await me(access.token);
    expect(who.statusCode).toBe(200);
    expect(who.json()).toMatchObject({
      account: { id: owner.accountId },
      user: { id: manager.userId, login: manager.login, role: 'manager' },
    });
    // Acting as a manager, it gets a manager's answers.
    expect(
      (await h.request({ method: 'POST', url: '/v1.3/managers', payload: { login: 'x@example.com' }, token: access.token })).statusCode,
    ).toBe(403);

    // A numeric manager id works as well; so does the owner.
    expect((await exchange(plugin.pluginToken, manager.userId)).statusCode).toBe(200);
    const asOwner = (await exchange(plugin.pluginToken, owner.userId)).json().accessToken.token;
    expect((await me(asOwner)).json().user.role).toBe('owner');

    expect((await deletePlugin(owner.access, plugin.id)).statusCode).toBe(200);
    expect((await listPlugins(owner.access)).json()).toEqual([]);
    expect((await exchange(plugin.pluginToken, manager.userId)).statusCode).toBe(401);
    expect((await me(access.token)).statusCode).toBe(401);
    expect((await me(asOwner)).statusCode).toBe(401);
    expect((await deletePlugin(owner.access, plugin.id)).statusCode).toBe(404);
  });

  it('deleting one plugin leaves the others working', async () => {
    const owner = await h.signUp();
    const first = await newPlugin(owner);
    const second = await newPlugin(owner);
    const token = (await exchange(second.pluginToken, owner.userId)).json().accessToken.token;
    expect((await deletePlugin(owner.access, first.id)).statusCode).toBe(200);
    expect((await me(token)).statusCode).toBe(200);
    expect((await exchange(second.pluginToken, owner.userId)).statusCode).toBe(200);
  });

  it('stores only a hash of the plugin token', async () => {
    const owner = await h.signUp();
    const plugin = await newPlugin(owner);
    const row = await h.database.db.kysely.selectFrom('plugins').selectAll().where('id', '=', plugin.id).executeTakeFirstOrThrow();
    expect(row.token_hash).toBe(sha256(plugin.pluginToken));
    expect(JSON.stringify(row)).not.toContain(plugin.pluginToken);
  });

  it('defaults name to the type and metadata to {}', async () => {
    const owner = await h.signUp();
    const res = await createPlugin(owner.access, { type: 'analytics' });
    expect(res.json()).toMatchObject({ type: 'analytics', name: 'analytics', metadata: {} });
  });
});

describe('POST /auth/plugin refusals (401)', () => {
  it("refuses unknown tokens, employees outside the plugin's account, unknown and unconfirmed employees", async () => {
    const owner = await h.signUp();
    const other = await h.signUp();
    const foreignManager = await createManager(h, other);
    const plugin = await newPlugin(owner);
    const invited = await insertUser(h.database.db.kysely, {
      account_id: owner.accountId,
      login: `invited-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`,
      name: null,
      password_hash: null,
      role: 'manager',
      confirmed: 0,
      created_at: h.clock.now(),
    });

    expect((await exchange('plg_unknown', owner.userId)).statusCode).toBe(401);
    expect((await exchange(`${plugin.pluginToken}x`, owner.userId)).statusCode).toBe(401);
    expect((await exchange(plugin.pluginToken, foreignManager.userId)).statusCode).toBe(401);
    expect((await exchange(plugin.pluginToken, other.userId)).statusCode).toBe(401);
    expect((await exchange(plugin.pluginToken, 987654321)).statusCode).toBe(401);
    expect((await exchange(plugin.pluginToken, invited.id)).statusCode).toBe(401);
    const body = (await exchange('plg_unknown', owner.userId)).json();
    expect(body.code).toBe('unauthorized');
  });

  it('validates the body (400) and never accepts the plugin token as a bearer token', async () => {
    const owner = await h.signUp();
    const plugin = await newPlugin(owner);
    expect((await exchange(plugin.pluginToken, 'abc')).statusCode).toBe(400);
    expect((await exchange(plugin.pluginToken, 0)).statusCode).toBe(400);
    expect((await h.request({ method: 'POST', url: '/v1.3/auth/plugin', payload: { manager: owner.userId } })).statusCode).toBe(400);
    expect((await me(plugin.pluginToken)).statusCode).toBe(401);
  });

  it('a plugin access token expires after its lifetime', async () => {
    const owner = await h.signUp();
    const plugin = await newPlugin(owner);
    const token = (await exchange(plugin.pluginToken, owner.userId)).json().accessToken.token;
    h.clock.advance(3600 * 1000 + 1000);
    expect((await me(token)).statusCode).toBe(401);
    // The plugin token itself does not expire.
    expect((await exchange(plugin.pluginToken, owner.userId)).statusCode).toBe(200);
  });
});

describe('who may manage plugins', () => {
  it('only a signed-in owner: a plugin token acting as the owner, or an API key, gets 403', async () => {
    const owner = await h.signUp();
    const plugin = await newPlugin(owner);
    const asOwner = (await exchange(plugin.pluginToken, owner.userId)).json().accessToken.token;
    const key = await h.request({
      method: 'POST',
      url: '/v1.3/account/me/api-keys',
      payload: { name: 'integration' },
      token: owner.access,
    });
    expect(key.statusCode).toBe(200);
    for (const token of [asOwner, key.json().token]) {
      expect((await createPlugin(token)).statusCode).toBe(403);
      expect((await listPlugins(token)).statusCode).toBe(403);
      expect((await deletePlugin(token, plugin.id)).statusCode).toBe(403);
    }
    expect((await listPlugins(owner.access)).json()).toHaveLength(1);
  });
});

describe('bad input', () => {
  it('answers 400 and creates nothing', async () => {
    const owner = await h.signUp();
    const bodies: object[] = [
      {},
      { type: '' },
      { type: 'x'.repeat(101) },
      { type: 'crm', name: '' },
      { type: 'crm', metadata: 'text' },
      { type: 'crm', metadata: [1, 2] },
      { type: 'crm', metadata: { blob: 'x'.repeat(17 * 1024) } },
    ];
    for (const body of bodies) {
      const res = await createPlugin(owner.access, body);
      expect(res.statusCode, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect((await listPlugins(owner.access)).json()).toEqual([]);
    expect((await deletePlugin(owner.access, 'abc' as unknown as number)).statusCode).toBe(400);
  });
});
