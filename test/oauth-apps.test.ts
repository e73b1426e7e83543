import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createManager } from './helpers/fixtures.js';

/** OAuth 2 app registration and the protocol endpoints' answers to bad input (nothing stored, never a 500). */
let h: Harness;
let owner: SignedUp;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
});

afterAll(async () => {
  await h.close();
});

const create = (payload: unknown, token = owner.access) =>
  h.request({ method: 'POST', url: '/v1.3/oauth/apps', token, payload: payload as object });
const appCount = async () => (await h.database.db.kysely.selectFrom('oauth_apps').select('id').execute()).length;
const form = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  h.request({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(body).toString(),
  });

describe('OAuth 2 apps', () => {
  it('registers, lists and deletes apps (owner, signed in)', async () => {
    const made = await create({
      name: 'Bot platform',
      redirectUris: ['https://bots.example/cb', 'http://127.0.0.1:8765/cb', 'com.example.app:/oauth'],
      confidential: false,
    });
    expect(made.statusCode).toBe(200);
    expect(made.json()).toMatchObject({
      name: 'Bot platform',
      confidential: false,
      redirectUris: ['https://bots.example/cb', 'http://127.0.0.1:8765/cb', 'com.example.app:/oauth'],
    });
    expect(made.json().clientSecret).toBeUndefined();
    const list = await h.request({ method: 'GET', url: '/v1.3/oauth/apps', token: owner.access });
    expect(list.json().map((a: { id: number }) => a.id)).toContain(made.json().id);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/oauth/apps/${made.json().id}`, token: owner.access })).statusCode).toBe(200);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/oauth/apps/${made.json().id}`, token: owner.access })).statusCode).toBe(404);
  });

  it('refuses bad registrations with a clear error and stores nothing', async () => {
    const before = await appCount();
    const bad: unknown[] = [
      { name: 'x', redirectUris: ['http://crm.example.com/cb'], confidential: true },
      { name: 'x', redirectUris: ['https://crm.example.com/cb#frag'], confidential: true },
      { name: 'x', redirectUris: ['/relative'], confidential: true },
      { name: 'x', redirectUris: ['javascript:alert(1)'], confidential: true },
      { name: 'x', redirectUris: [], confidential: true },
      { name: 'x', redirectUris: Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`), confidential: true },
      { name: 'x'.repeat(201), redirectUris: ['https://a.example/cb'], confidential: true },
      { name: '   ', redirectUris: ['https://a.example/cb'], confidential: true },
      { name: 'x', redirectUris: ['https://a.example/cb'] },
      { name: 'x', redirectUris: ['https://a.example/\u0000'], confidential: 'yes' },
    ];
    for (const payload of bad) {
      const res = await create(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect(await appCount()).toBe(before);
  });

  it("is the owner's, from a signed-in session only", async () => {
    const manager = await createManager(h, owner);
    expect((await create({ name: 'x', redirectUris: ['https://a.example/cb'], confidential: true }, manager.access)).statusCode).toBe(403);
    const key = await h.request({ method: 'POST', url: '/v1.3/account/me/api-keys', token: owner.access, payload: { name: 'k' } });
    expect((await create({ name: 'x', redirectUris: ['https://a.example/cb'], confidential: true }, key.json().token)).statusCode).toBe(
      403,
    );
    expect((await h.request({ method: 'GET', url: '/v1.3/oauth/apps', token: key.json().token })).statusCode).toBe(403);
    expect((await h.request({ method: 'GET', url: '/v1.3/oauth/grants', token: key.json().token })).statusCode).toBe(403);
    // An employee revoking an app it never authorized: not found.
    expect((await h.request({ method: 'DELETE', url: '/v1.3/oauth/grants/999999', token: manager.access })).statusCode).toBe(404);
  });
});

describe('OAuth 2 endpoints and bad input', () => {
  it('answers OAuth errors, never a 500', async () => {
    const json = await h.request({ method: 'POST', url: '/oauth/token', payload: { grant_type: 'authorization_code' } });
    expect(json.statusCode).toBe(400);
    expect(json.json().error).toBe('invalid_request');
    expect((await form('/oauth/token', {})).json().error).toBe('invalid_request');
    expect(
      (await form('/oauth/token', { grant_type: 'password', client_id: 'x', client_secret: 'y', username: 'a', password: 'b' })).json()
        .error,
    ).toBe('invalid_client');
    const nul = await form('/oauth/token', {
      grant_type: 'authorization_code',
      client_id: 'a\u0000b',
      code: 'c\u0000',
      code_verifier: 'x'.repeat(50),
    });
    expect(nul.statusCode).toBe(400);
    expect((await form('/oauth/revoke', { token: 'x', client_id: 'a\u0000b' })).statusCode).toBe(401);
    expect((await form('/oauth/revoke', { token: 'x' })).json().error).toBe('invalid_client');
    const huge = await form('/oauth/token', { grant_type: 'refresh_token', client_id: 'x', refresh_token: '9'.repeat(5000) });
    expect(huge.statusCode).toBeLessThan(500);
  });

  it('checks the consent request: unknown or malformed client ids are 400', async () => {
    for (const client_id of ['unknown', 'a\u0000b', 'x'.repeat(300)]) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/oauth/authorize',
        token: owner.access,
        payload: { response_type: 'code', client_id, allowed: true },
      });
      expect(res.statusCode, client_id).toBe(400);
    }
    const preview = await h.request({ method: 'GET', url: '/v1.3/oauth/authorize?response_type=token&client_id=x', token: owner.access });
    expect(preview.json().code).toBe('unsupported_response_type');
  });
});
