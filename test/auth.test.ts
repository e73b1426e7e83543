import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeJwt } from 'jose';
import { createHarness, type Harness } from './helpers/harness.js';
import { insertUser } from '../src/domain/users/users.repo.js';
import { hashPassword } from '../src/domain/auth/passwords.js';

const DAY = 24 * 3600 * 1000;

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_FAILURES: '3', PARLEY_LOGIN_MAX_PER_IP: '1000' } });
});
afterAll(() => h.close());

const login = (body: object, remoteAddress?: string) =>
  h.request({ method: 'POST', url: '/v1.3/auth/login', payload: body, remoteAddress });
const refresh = (token: string) => h.request({ method: 'POST', url: '/v1.3/auth/tokens', headers: { authorization: `Bearer ${token}` } });
const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });

describe('login', () => {
  it('answers an access and a refresh token with the claims of docs/api/auth.md', async () => {
    const owner = await h.signUp();
    const res = await login({ login: owner.login.toUpperCase(), pass: owner.pass });
    expect(res.statusCode).toBe(200);
    const { accessToken, refreshToken } = res.json();
    const claims = decodeJwt(accessToken.token);
    expect(claims).toMatchObject({ typ: 'access', sub: String(owner.userId), accountId: owner.accountId });
    expect(typeof claims.jti).toBe('string');
    expect(accessToken.exp).toBe(Math.floor(h.clock.now() / 1000) + 3600);
    expect(decodeJwt(refreshToken.token).typ).toBe('refresh');
    expect(refreshToken.exp).toBe(Math.floor(h.clock.now() / 1000) + 30 * 24 * 3600);
  });

  it('gives the same 401 for a wrong password and for an unknown login', async () => {
    const owner = await h.signUp();
    const wrong = await login({ login: owner.login, pass: 'not the password' });
    const unknown = await login({ login: 'nobody@example.com', pass: 'whatever1' });
    expect(wrong.statusCode).toBe(401);
    expect(unknown.statusCode).toBe(401);
    expect(wrong.json().error).toBe(unknown.json().error);
  });

  it('refuses an unconfirmed employee even with the right password', async () => {
    const owner = await h.signUp();
    await insertUser(h.database.db.kysely, {
      account_id: owner.accountId,
      login: 'invited@example.com',
      name: null,
      password_hash: await hashPassword('invited-pass'),
      role: 'manager',
      confirmed: 0,
      created_at: h.clock.now(),
    });
    expect((await login({ login: 'invited@example.com', pass: 'invited-pass' })).statusCode).toBe(401);
  });

  it('locks a login after repeated failures (429 with Retry-After), then lets it in after the window', async () => {
    const owner = await h.signUp();
    for (let i = 0; i < 3; i++) expect((await login({ login: owner.login, pass: 'wrong' })).statusCode).toBe(401);
    const locked = await login({ login: owner.login, pass: owner.pass });
    expect(locked.statusCode).toBe(429);
    expect(locked.json().code).toBe('rate_limited');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    h.clock.advance(Number(locked.headers['retry-after']) * 1000);
    expect((await login({ login: owner.login, pass: owner.pass })).statusCode).toBe(200);
  });

  it('rejects bodies of the wrong shape with 400 and the field in details', async () => {
    const res = await login({ login: 'x@example.com', pass: 12345 });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_failed', details: [{ path: 'body.pass' }] });
    expect((await login({ login: 'x@example.com' })).json().details[0].path).toBe('body.pass');
    expect((await login({ login: 'a'.repeat(300), pass: 'x' })).statusCode).toBe(400);
  });
});

describe('per-IP login limit', () => {
  it('answers 429 to one address that tries too often, and not to another', async () => {
    const strict = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '2' } });
    try {
      const attempt = (ip: string) =>
        strict.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: 'a@b.co', pass: 'x' }, remoteAddress: ip });
      expect((await attempt('10.0.0.1')).statusCode).toBe(401);
      expect((await attempt('10.0.0.1')).statusCode).toBe(401);
      expect((await attempt('10.0.0.1')).statusCode).toBe(429);
      expect((await attempt('10.0.0.2')).statusCode).toBe(401);
    } finally {
      await strict.close();
    }
  });
});

describe('Authorization header forms', () => {
  it('accepts Bearer in any case, JWT, and the bare token', async () => {
    const owner = await h.signUp();
    for (const header of [
      `Bearer ${owner.access}`,
      `bearer ${owner.access}`,
      `BEARER ${owner.access}`,
      `JWT ${owner.access}`,
      owner.access,
    ]) {
      const res = await h.request({ method: 'GET', url: '/v1.3/account/me', headers: { authorization: header } });
      expect(res.statusCode, header.slice(0, 8)).toBe(200);
    }
  });

  it('answers 401 to missing, malformed, foreign-signed and expired tokens', async () => {
    const owner = await h.signUp();
    const forged = owner.access.slice(0, -4) + (owner.access.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    for (const header of [undefined, 'Bearer', 'Basic dXNlcjpwYXNz', `Token ${owner.access}`, `Bearer ${forged}`, 'Bearer a.b.c']) {
      const res = await h.request({ method: 'GET', url: '/v1.3/account/me', headers: header ? { authorization: header } : {} });
      expect(res.statusCode, String(header)).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
    h.clock.advance(3601 * 1000);
    expect((await me(owner.access)).statusCode).toBe(401);
  });
});

describe('refresh', () => {
  it('answers only a new access token while the refresh token has more than half of its life', async () => {
    const owner = await h.signUp();
    h.clock.advance(2 * DAY);
    const res = await refresh(owner.refresh);
    expect(res.statusCode).toBe(200);
    expect(Object.keys(res.json())).toEqual(['accessToken']);
    expect((await me(res.json().accessToken.token)).statusCode).toBe(200);
    // The same refresh token keeps working: it was not rotated.
    expect((await refresh(owner.refresh)).statusCode).toBe(200);
  });

  it('rotates after half its life: both tokens, the old one revoked', async () => {
    const owner = await h.signUp();
    h.clock.advance(16 * DAY);
    const res = await refresh(owner.refresh);
    expect(res.statusCode).toBe(200);
    const next = res.json().refreshToken.token;
    expect(next).toBeDefined();
    expect(next).not.toBe(owner.refresh);
    expect((await refresh(next)).statusCode).toBe(200);
  });

  it('revokes the whole family when a rotated token is presented again', async () => {
    const owner = await h.signUp();
    h.clock.advance(16 * DAY);
    const next = (await refresh(owner.refresh)).json().refreshToken.token;
    const reuse = await refresh(owner.refresh);
    expect(reuse.statusCode).toBe(401);
    // The thief's reuse also kills the legitimate successor.
    expect((await refresh(next)).statusCode).toBe(401);
  });

  it('the same token presented twice at once: one rotation wins and the whole family ends', async () => {
    for (let round = 0; round < 5; round++) {
      const owner = await h.signUp();
      h.clock.advance(16 * DAY);
      const answers = await Promise.all([refresh(owner.refresh), refresh(owner.refresh)]);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 401]);
      const winner = answers.find((r) => r.statusCode === 200)!.json().refreshToken.token as string;
      // The winner's successor was revoked with the family: a reuse leaves nothing usable.
      expect((await refresh(winner)).statusCode).toBe(401);
    }
  });

  it('refuses an expired refresh token', async () => {
    const owner = await h.signUp();
    h.clock.advance(31 * DAY);
    expect((await refresh(owner.refresh)).statusCode).toBe(401);
  });

  it('takes the refresh token from the body too, with any header form absent', async () => {
    const owner = await h.signUp();
    const res = await h.request({ method: 'POST', url: '/v1.3/auth/tokens', payload: { refreshToken: owner.refresh } });
    expect(res.statusCode).toBe(200);
    const jwtForm = await h.request({ method: 'POST', url: '/v1.3/auth/tokens', headers: { authorization: `JWT ${owner.refresh}` } });
    expect(jwtForm.statusCode).toBe(200);
  });

  it('accepts an empty body sent with Content-Type: application/json', async () => {
    const owner = await h.signUp();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/auth/tokens',
      headers: { authorization: owner.refresh, 'content-type': 'application/json' },
      body: '',
    });
    expect(res.statusCode).toBe(200);
  });

  it('refuses an access token used as a refresh token, and a refresh token used as an access token', async () => {
    const owner = await h.signUp();
    expect((await refresh(owner.access)).statusCode).toBe(401);
    expect((await me(owner.refresh)).statusCode).toBe(401);
  });

  it('answers 401 without any token', async () => {
    expect((await h.request({ method: 'POST', url: '/v1.3/auth/tokens' })).statusCode).toBe(401);
  });
});

describe('registration', () => {
  it('opens for the first account and closes afterwards when sign-up is closed', async () => {
    const closed = await createHarness({ env: { PARLEY_SIGNUP: 'closed' } });
    try {
      const register = (login: string) =>
        closed.request({ method: 'POST', url: '/v1.3/auth/register', payload: { login, pass: 'password123', name: 'N' } });
      const first = await register('first@example.com');
      expect(first.statusCode).toBe(200);
      expect(
        (await closed.request({ method: 'GET', url: '/v1.3/account/me', token: first.json().accessToken.token })).json().user.role,
      ).toBe('owner');
      const second = await register('second@example.com');
      expect(second.statusCode).toBe(403);
      expect(second.json().code).toBe('signup_closed');
      expect(await closed.services.accounts.list()).toHaveLength(1);
    } finally {
      await closed.close();
    }
  });

  it('refuses a login that is taken, a short password and a non-e-mail login, writing nothing', async () => {
    const owner = await h.signUp();
    const before = (await h.services.accounts.list()).length;
    const register = (payload: object) => h.request({ method: 'POST', url: '/v1.3/auth/register', payload });
    expect((await register({ login: owner.login, pass: 'password123', name: 'X' })).statusCode).toBe(409);
    expect((await register({ login: 'new@example.com', pass: 'short', name: 'X' })).statusCode).toBe(400);
    expect((await register({ login: 'not-an-email', pass: 'password123', name: 'X' })).statusCode).toBe(400);
    expect((await register({ login: 'new@example.com', pass: 'password123', name: '' })).statusCode).toBe(400);
    expect((await h.services.accounts.list()).length).toBe(before);
  });
});

describe('API keys', () => {
  it('lets the owner create, list and revoke keys; a key authorizes until revoked', async () => {
    const owner = await h.signUp();
    const created = await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token: owner.access, payload: { name: 'crm' } });
    expect(created.statusCode).toBe(200);
    const { id, token } = created.json();
    expect(decodeJwt(token)).toMatchObject({ typ: 'api' });
    expect(decodeJwt(token).exp).toBeUndefined();

    const list = await h.request({ method: 'GET', url: '/v1.3/account/me/api-keys', token: owner.access });
    expect(list.json()).toEqual([{ id, name: 'crm', createdAt: h.clock.now() }]);
    expect(JSON.stringify(list.json())).not.toContain(token);

    h.clock.advance(400 * DAY);
    const viaKey = await me(token);
    expect(viaKey.statusCode).toBe(200);
    expect(viaKey.json()).toEqual({ account: { id: owner.accountId, status: 'active' } });

    // A key cannot mint further keys.
    expect((await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token, payload: { name: 'x' } })).statusCode).toBe(403);

    const fresh = (await login({ login: owner.login, pass: owner.pass })).json().accessToken.token;
    expect((await h.request({ method: 'DELETE', url: `/v1.3/account/me/api-keys/${id}`, token: fresh })).statusCode).toBe(200);
    expect((await me(token)).statusCode).toBe(401);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/account/me/api-keys/${id}`, token: fresh })).statusCode).toBe(404);
  });

  it("answers 404 for another account's key", async () => {
    const a = await h.signUp();
    const b = await h.signUp();
    const key = (await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token: a.access, payload: { name: 'k' } })).json();
    const res = await h.request({ method: 'DELETE', url: `/v1.3/account/me/api-keys/${key.id}`, token: b.access });
    expect(res.statusCode).toBe(404);
    expect((await me(key.token)).statusCode).toBe(200);
  });
});

describe('password reset', () => {
  it('signs the owner out everywhere and accepts only the new password', async () => {
    const owner = await h.signUp();
    h.clock.advance(1000);
    await h.services.accounts.resetOwnerPassword(owner.login, 'brand new password');
    expect((await me(owner.access)).statusCode).toBe(401);
    expect((await refresh(owner.refresh)).statusCode).toBe(401);
    h.clock.advance(1000);
    expect((await login({ login: owner.login, pass: owner.pass })).statusCode).toBe(401);
    expect((await login({ login: owner.login, pass: 'brand new password' })).statusCode).toBe(200);
  });
});

describe('plugin sign-in', () => {
  it('answers 401 while no plugin token exists, and validates its body', async () => {
    const ok = await h.request({ method: 'POST', url: '/v1.3/auth/plugin', payload: { pluginToken: 'x', manager: '5' } });
    expect(ok.statusCode).toBe(401);
    const bad = await h.request({ method: 'POST', url: '/v1.3/auth/plugin', payload: { pluginToken: 'x', manager: 'five' } });
    expect(bad.statusCode).toBe(400);
  });
});
