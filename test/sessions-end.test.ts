import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AddressInfo } from 'node:net';
import { createHarness, type Harness } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';

/**
 * Ending sessions (password reset, sign-out everywhere, an employee's removal) ends every access
 * and refresh token issued before it, to the token generation, and closes the employee's open
 * realtime sockets.
 */
let h: Harness;
let base: string;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '10000' } });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `ws://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1.3/realtime`;
});
afterAll(() => h.close());

const me = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/me', token });
const refresh = (token: string) => h.request({ method: 'POST', url: '/v1.3/auth/tokens', token });
const login = (body: { login: string; pass: string }) => h.request({ method: 'POST', url: '/v1.3/auth/login', payload: body });

/** Opens a realtime socket and resolves once it is subscribed; `closed` resolves with the close code. */
async function openStream(token: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(`${base}?token=${token}`);
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (data) => {
      if ((JSON.parse(data.toString()) as { type: string }).type === 'ready') resolve();
    });
    ws.once('error', reject);
  });
  return { ws, closed };
}

describe('password reset', () => {
  it('ends every token of logins racing it within the same millisecond, refresh tokens included', async () => {
    const owner = await h.signUp();
    // The clock stands still: every token below is issued in the millisecond of the reset. The
    // reset starts once a first login has its tokens, while the others are still under way.
    let issuedOne = (): void => {};
    const firstIssued = new Promise<void>((resolve) => (issuedOne = resolve));
    const racing = Array.from({ length: 12 }, () =>
      login({ login: owner.login, pass: owner.pass }).then((res) => {
        if (res.statusCode === 200) issuedOne();
        return res;
      }),
    );
    await Promise.race([firstIssued, Promise.all(racing)]);
    const reset = h.services.accounts.resetOwnerPassword(owner.login, 'brand new password');
    const answers = await Promise.all(racing);
    await reset;
    const issued = answers.filter((r) => r.statusCode === 200).map((r) => r.json());
    expect(issued.length).toBeGreaterThan(0);
    for (const pair of [{ accessToken: { token: owner.access }, refreshToken: { token: owner.refresh } }, ...issued]) {
      expect((await me(pair.accessToken.token)).statusCode).toBe(401);
      expect((await refresh(pair.refreshToken.token)).statusCode).toBe(401);
    }
    const fresh = await login({ login: owner.login, pass: 'brand new password' });
    expect(fresh.statusCode).toBe(200);
    expect((await me(fresh.json().accessToken.token)).statusCode).toBe(200);
    expect((await refresh(fresh.json().refreshToken.token)).statusCode).toBe(200);
  });

  it('closes the open realtime sockets of the owner', async () => {
    const owner = await h.signUp();
    const stream = await openStream(owner.access);
    await h.services.accounts.resetOwnerPassword(owner.login, 'another new password');
    expect(await stream.closed).toBe(4401);
  });
});

describe('sign-out everywhere', () => {
  it('ends the access, refresh and API tokens issued before it; a new login works', async () => {
    const owner = await h.signUp();
    const second = (await login({ login: owner.login, pass: owner.pass })).json();
    const key = (await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token: owner.access, payload: { name: 'k' } })).json();
    // An API key cannot sign the owner out: only a signed-in session does.
    expect((await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions', token: key.token })).statusCode).toBe(403);
    const stream = await openStream(second.accessToken.token);

    const res = await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions', token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(await stream.closed).toBe(4401);
    for (const token of [owner.access, second.accessToken.token, key.token]) expect((await me(token)).statusCode).toBe(401);
    for (const token of [owner.refresh, second.refreshToken.token]) expect((await refresh(token)).statusCode).toBe(401);
    const fresh = (await login({ login: owner.login, pass: owner.pass })).json();
    expect((await me(fresh.accessToken.token)).statusCode).toBe(200);
  });

  it('needs a token', async () => {
    expect((await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions' })).statusCode).toBe(401);
  });
});

describe("an employee's removal", () => {
  it('ends its tokens and closes its realtime sockets', async () => {
    const owner = await h.signUp();
    const manager = await createManager(h, owner);
    const pair = (await login({ login: manager.login, pass: 'manager password' })).json();
    const stream = await openStream(manager.access);
    const res = await h.request({ method: 'DELETE', url: `/v1.3/managers/${manager.userId}`, token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(await stream.closed).toBe(4401);
    expect((await me(pair.accessToken.token)).statusCode).toBe(401);
    expect((await refresh(pair.refreshToken.token)).statusCode).toBe(401);
  });
});

describe('sessions ended by another process', () => {
  it('close this process’s sockets at the next session check', async () => {
    const owner = await h.signUp();
    const stream = await openStream(owner.access);
    // What another process's sign-out leaves behind: the row's generation moved, no in-process notice.
    await h.database.db.kysely
      .updateTable('users')
      .set((eb) => ({ token_generation: eb('token_generation', '+', 1) }))
      .where('id', '=', owner.userId)
      .execute();
    const other = await h.signUp();
    const untouched = await openStream(other.access);
    await h.services.realtime.checkSessions();
    expect(await stream.closed).toBe(4401);
    expect(untouched.ws.readyState).toBe(WebSocket.OPEN);
    untouched.ws.close();
  });
});
