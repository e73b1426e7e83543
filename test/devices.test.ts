import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';

/** Device registration: validation, ownership, and removal when the employee signs out everywhere. */
let h: Harness;
let owner: SignedUp;
const P256 = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 7)]).toString('base64url');
const AUTH = Buffer.alloc(16, 9).toString('base64url');
const web = (endpoint = 'https://push.example.com/send/abc', keys = { p256dh: P256, auth: AUTH }) => ({
  platform: 'web',
  subscription: { endpoint, keys },
  name: 'Laptop',
});

beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
  owner = await h.signUp();
});

afterAll(async () => {
  await h.close();
});

const register = (payload: unknown, token = owner.access) =>
  h.request({ method: 'POST', url: '/v1.3/devices', token, payload: payload as object });
const count = async () => (await h.database.db.kysely.selectFrom('devices').select('id').execute()).length;

describe('devices', () => {
  it('registers web and FCM devices, lists and deletes them; the same endpoint again is the same device', async () => {
    const a = await register(web());
    expect(a.statusCode).toBe(200);
    expect(a.json()).toMatchObject({ platform: 'web', name: 'Laptop' });
    const again = await register({ ...web(), name: 'Work laptop' });
    expect(again.json()).toMatchObject({ id: a.json().id, name: 'Work laptop' });
    const b = await register({ platform: 'fcm', token: 'fcm-token-123:APA91b' });
    expect(b.json(), b.body).toMatchObject({ platform: 'fcm', name: null });
    const list = await h.request({ method: 'GET', url: '/v1.3/devices', token: owner.access });
    expect(list.json().map((d: { id: number }) => d.id)).toEqual([a.json().id, b.json().id]);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/devices/${b.json().id}`, token: owner.access })).statusCode).toBe(200);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/devices/${b.json().id}`, token: owner.access })).statusCode).toBe(404);
  });

  it('refuses malformed subscriptions and oversized names, storing nothing', async () => {
    const before = await count();
    const bad: unknown[] = [
      { platform: 'web' },
      { platform: 'web', subscription: { endpoint: 'https://push.example.com/x' } },
      web('not a url'),
      web('ftp://push.example.com/x'),
      web('https://push.example.com/x', { p256dh: Buffer.alloc(65, 4).toString('base64url').slice(0, 40), auth: AUTH }),
      web('https://push.example.com/x', { p256dh: Buffer.concat([Buffer.from([2]), Buffer.alloc(64)]).toString('base64url'), auth: AUTH }),
      web('https://push.example.com/x', { p256dh: P256, auth: Buffer.alloc(8).toString('base64url') }),
      web('https://push.example.com/x', { p256dh: 'not base64!', auth: AUTH }),
      { ...web(), name: 'x'.repeat(101) },
      { platform: 'fcm', token: '' },
      { platform: 'fcm', token: 'with space' },
      { platform: 'fcm', token: 'a\u0000b' },
      { platform: 'fcm', token: 'x'.repeat(5000) },
      { platform: 'apns', token: 'x' },
      { platform: 'fcm', token: 'x', subscription: web().subscription },
    ];
    for (const payload of bad) {
      const res = await register(payload);
      expect(res.statusCode, JSON.stringify(payload).slice(0, 120)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect(await count()).toBe(before);
  });

  it('refuses endpoints on private addresses unless allowed', async () => {
    const strict = await createHarness();
    try {
      const o = await strict.signUp();
      for (const endpoint of ['https://127.0.0.1/push', 'https://10.0.0.5/push', 'http://push.example.com/x']) {
        const res = await strict.request({ method: 'POST', url: '/v1.3/devices', token: o.access, payload: web(endpoint) });
        expect(res.statusCode, endpoint).toBe(400);
      }
    } finally {
      await strict.close();
    }
  });

  it("keeps devices to their employee: another employee's id is not found", async () => {
    const manager = await createManager(h, owner);
    const mine = await register(web('https://push.example.com/send/manager'), manager.access);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/devices/${mine.json().id}`, token: owner.access })).statusCode).toBe(404);
    const ownerList = await h.request({ method: 'GET', url: '/v1.3/devices', token: owner.access });
    expect(ownerList.json().map((d: { id: number }) => d.id)).not.toContain(mine.json().id);
    expect((await h.request({ method: 'DELETE', url: '/v1.3/devices/abc', token: owner.access })).statusCode).toBe(400);
    // A deleted employee's devices go with it.
    await h.request({ method: 'DELETE', url: `/v1.3/managers/${manager.userId}`, token: owner.access });
    const left = await h.database.db.kysely.selectFrom('devices').select('id').where('user_id', '=', manager.userId).execute();
    expect(left).toEqual([]);
  });

  it("signing out everywhere (a password reset) removes the employee's devices", async () => {
    await register(web('https://push.example.com/send/reset'));
    await h.services.accounts.resetOwnerPassword(owner.login, 'a brand new password');
    const left = await h.database.db.kysely.selectFrom('devices').select('id').where('user_id', '=', owner.userId).execute();
    expect(left).toEqual([]);
  });

  it("signing out everywhere (DELETE /auth/sessions) removes the employee's devices", async () => {
    const manager = await createManager(h, owner);
    await register(web('https://push.example.com/send/sessions'), manager.access);
    expect((await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions', token: manager.access })).statusCode).toBe(200);
    const left = await h.database.db.kysely.selectFrom('devices').select('id').where('user_id', '=', manager.userId).execute();
    expect(left).toEqual([]);
  });

  it('answers the VAPID public key, generated once into the data folder', async () => {
    const login = await h.request({
      method: 'POST',
      url: '/v1.3/auth/login',
      payload: { login: owner.login, pass: 'a brand new password' },
    });
    const token = login.json().accessToken.token;
    const first = await h.request({ method: 'GET', url: '/v1.3/devices/vapid-key', token });
    expect(Buffer.from(first.json().publicKey, 'base64url')).toHaveLength(65);
    expect((await h.request({ method: 'GET', url: '/v1.3/devices/vapid-key', token })).json()).toEqual(first.json());
    expect((await h.request({ method: 'GET', url: '/v1.3/devices/settings', token })).json()).toEqual({ previews: true });
  });
});
