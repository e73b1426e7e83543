import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import * as oauth from 'oauth4webapi';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';

/**
 * The OAuth 2 authorization server driven by oauth4webapi (a client library nobody here wrote)
 * over real HTTP: discovery, PKCE, the code grant, rotation, revocation. The consent step is the
 * agent app's call (POST /v1.3/oauth/authorize), made here with the employee's session.
 */
let h: Harness;
let owner: SignedUp;
let issuer: URL;
let as: oauth.AuthorizationServer;
const REDIRECT = 'https://crm.example.com/callback';
const insecure = { [oauth.allowInsecureRequests]: true };

interface RegisteredApp {
  id: number;
  clientId: string;
  clientSecret?: string;
}

async function registerApp(confidential: boolean, redirectUris = [REDIRECT]): Promise<RegisteredApp> {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/oauth/apps',
    token: owner.access,
    payload: { name: 'CRM connector', redirectUris, confidential },
  });
  expect(res.statusCode).toBe(200);
  return res.json();
}

/** The consent: the employee allows (or denies) on the agent app; answers the redirect back to the app. */
async function consent(session: string, params: Record<string, string>, allowed = true): Promise<URL> {
  const res = await h.request({ method: 'POST', url: '/v1.3/oauth/authorize', token: session, payload: { ...params, allowed } });
  expect(res.statusCode, res.body).toBe(200);
  return new URL(res.json().redirectTo);
}

interface Flow {
  client: oauth.Client;
  auth: oauth.ClientAuth;
  verifier: string;
  params: Record<string, string>;
}

async function startFlow(app: RegisteredApp, scope = 'read write'): Promise<Flow> {
  const verifier = oauth.generateRandomCodeVerifier();
  const params = {
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: REDIRECT,
    scope,
    state: oauth.generateRandomState(),
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  };
  const auth = app.clientSecret ? oauth.ClientSecretBasic(app.clientSecret) : oauth.None();
  return { client: { client_id: app.clientId }, auth, verifier, params };
}

async function exchange(flow: Flow, callback: URL, verifier: string | typeof oauth.nopkce = flow.verifier, redirect = REDIRECT) {
  const cb = oauth.validateAuthResponse(as, flow.client, callback, flow.params.state);
  const res = await oauth.authorizationCodeGrantRequest(as, flow.client, flow.auth, cb, redirect, verifier, insecure);
  return oauth.processAuthorizationCodeResponse(as, flow.client, res);
}

async function refresh(flow: Flow, token: string, scope?: string) {
  const res = await oauth.refreshTokenGrantRequest(as, flow.client, flow.auth, token, {
    ...insecure,
    additionalParameters: scope ? { scope } : undefined,
  });
  return oauth.processRefreshTokenResponse(as, flow.client, res);
}

async function tokenError(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  // A 401 with a challenge (client authentication failed) is reported before the body is read.
  if (err instanceof oauth.WWWAuthenticateChallengeError) return ((await err.response.json()) as { error: string }).error;
  expect(err).toBeInstanceOf(oauth.ResponseBodyError);
  return (err as oauth.ResponseBodyError).error;
}

const call = (token: string, method: string, url: string, payload?: object) =>
  h.request({ method: method as 'GET', url, token, ...(payload ? { payload } : {}) });

beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  issuer = new URL(`http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`);
  owner = await h.signUp();
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
});

afterAll(async () => {
  await h.close();
});

describe('OAuth 2 authorization server', () => {
  it('publishes RFC 8414 metadata', () => {
    expect(as.issuer).toBe(issuer.href.replace(/\/$/, ''));
    expect(as.token_endpoint).toBe(`${as.issuer}/oauth/token`);
    expect(as.authorization_endpoint).toBe(`${as.issuer}/oauth/authorize`);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.scopes_supported).toEqual(['read', 'write', 'admin']);
  });

  it('runs the code flow for a public client with PKCE; the token acts as the employee, with the user object', async () => {
    const app = await registerApp(false);
    expect(app.clientSecret).toBeUndefined();
    const flow = await startFlow(app);
    const preview = await h.request({
      method: 'GET',
      url: `/v1.3/oauth/authorize?${new URLSearchParams(flow.params)}`,
      token: owner.access,
    });
    expect(preview.json()).toEqual({
      app: { clientId: app.clientId, name: 'CRM connector' },
      scopes: ['read', 'write'],
      redirectUri: REDIRECT,
    });
    const callback = await consent(owner.access, flow.params);
    expect(callback.origin + callback.pathname).toBe(REDIRECT);
    const tokens = await exchange(flow, callback);
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope).toBe('read write');
    expect(tokens.refresh_token).toBeTruthy();

    const res = await oauth.protectedResourceRequest(
      tokens.access_token,
      'GET',
      new URL('/v1.3/account/me', issuer),
      new Headers(),
      null,
      insecure,
    );
    expect(res.status).toBe(200);
    const me = (await res.json()) as { user: unknown };
    expect(me.user).toMatchObject({ id: owner.userId, role: 'owner', login: owner.login });

    // Connected apps list it; revoking it there ends the token.
    const grants = await h.request({ method: 'GET', url: '/v1.3/oauth/grants', token: owner.access });
    expect(grants.json()).toEqual([expect.objectContaining({ appId: app.id, name: 'CRM connector', scopes: ['read', 'write'] })]);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/oauth/grants/${app.id}`, token: owner.access })).statusCode).toBe(200);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, tokens.refresh_token!))).toBe('invalid_grant');
    expect((await h.request({ method: 'GET', url: '/v1.3/oauth/grants', token: owner.access })).json()).toEqual([]);
  });

  it('rotates refresh tokens; a rotated one presented again revokes the whole grant', async () => {
    const flow = await startFlow(await registerApp(false));
    const first = await exchange(flow, await consent(owner.access, flow.params));
    const second = await refresh(flow, first.refresh_token!);
    expect(second.refresh_token).toBeTruthy();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await call(second.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(200);

    expect(await tokenError(refresh(flow, first.refresh_token!))).toBe('invalid_grant');
    expect(await tokenError(refresh(flow, second.refresh_token!))).toBe('invalid_grant');
    expect((await call(second.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
  });

  it('revokes with RFC 7009: a revoked refresh token ends the grant; unknown tokens are answered 200', async () => {
    const flow = await startFlow(await registerApp(true));
    const tokens = await exchange(flow, await consent(owner.access, flow.params));
    const revoke = async (token: string) =>
      oauth.processRevocationResponse(await oauth.revocationRequest(as, flow.client, flow.auth, token, insecure));
    await revoke('not-a-token-we-issued');
    await revoke(tokens.refresh_token!);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);

    const again = await exchange(flow, await consent(owner.access, flow.params));
    await revoke(again.access_token);
    expect((await call(again.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, again.refresh_token!))).toBe('invalid_grant');
  });

  it("requires a confidential client's secret", async () => {
    const app = await registerApp(true);
    expect(app.clientSecret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const flow = await startFlow(app);
    const callback = await consent(owner.access, flow.params);
    expect(await tokenError(exchange({ ...flow, auth: oauth.ClientSecretBasic('wrong') }, callback))).toBe('invalid_client');
    expect(await tokenError(exchange({ ...flow, auth: oauth.None() }, await consent(owner.access, flow.params)))).toBe('invalid_client');
    const tokens = await exchange(flow, await consent(owner.access, flow.params));
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(200);
    const listed = await h.request({ method: 'GET', url: '/v1.3/oauth/apps', token: owner.access });
    expect(JSON.stringify(listed.json())).not.toContain(app.clientSecret!);
  });
});

describe('OAuth 2 attacks', () => {
  it('never redirects to an unregistered URI; a code is bound to the redirect URI it was issued for', async () => {
    const app = await registerApp(false, [REDIRECT, 'https://crm.example.com/other']);
    const flow = await startFlow(app);
    const evil = await h.request({
      method: 'POST',
      url: '/v1.3/oauth/authorize',
      token: owner.access,
      payload: { ...flow.params, redirect_uri: 'https://evil.example.com/cb', allowed: true },
    });
    expect(evil.statusCode).toBe(400);
    expect(evil.json().code).toBe('invalid_client');
    const preview = await h.request({
      method: 'GET',
      url: `/v1.3/oauth/authorize?${new URLSearchParams({ ...flow.params, redirect_uri: 'https://evil.example.com/cb' })}`,
      token: owner.access,
    });
    expect(preview.json().code).toBe('invalid_redirect_uri');

    const callback = await consent(owner.access, flow.params);
    expect(await tokenError(exchange(flow, callback, flow.verifier, 'https://crm.example.com/other'))).toBe('invalid_request');
    // The failed exchange spent the code.
    expect(await tokenError(exchange(flow, callback))).toBe('invalid_grant');
  });

  it('a code used twice fails and revokes what it issued', async () => {
    const flow = await startFlow(await registerApp(false));
    const callback = await consent(owner.access, flow.params);
    const tokens = await exchange(flow, callback);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(200);
    expect(await tokenError(exchange(flow, callback))).toBe('invalid_grant');
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, tokens.refresh_token!))).toBe('invalid_grant');
  });

  it('refuses a missing or wrong PKCE verifier, and a public client without PKCE', async () => {
    const flow = await startFlow(await registerApp(false));
    expect(await tokenError(exchange(flow, await consent(owner.access, flow.params), oauth.nopkce))).toBe('invalid_grant');
    expect(await tokenError(exchange(flow, await consent(owner.access, flow.params), oauth.generateRandomCodeVerifier()))).toBe(
      'invalid_grant',
    );

    const { code_challenge: _c, code_challenge_method: _m, ...withoutPkce } = flow.params;
    const denied = await consent(owner.access, withoutPkce);
    expect(denied.searchParams.get('error')).toBe('invalid_request');
    expect(denied.searchParams.get('code')).toBeNull();
    const plain = await h.request({
      method: 'POST',
      url: '/v1.3/oauth/authorize',
      token: owner.access,
      payload: { ...flow.params, code_challenge_method: 'plain', allowed: true },
    });
    expect(new URL(plain.json().redirectTo).searchParams.get('error')).toBe('invalid_request');
  });

  it('refuses an expired code (one minute, on the injected clock)', async () => {
    const flow = await startFlow(await registerApp(false));
    const callback = await consent(owner.access, flow.params);
    h.clock.advance(61_000);
    expect(await tokenError(exchange(flow, callback))).toBe('invalid_grant');
  });

  it('sends a denial back to the app with its state', async () => {
    const flow = await startFlow(await registerApp(false));
    const back = await consent(owner.access, flow.params, false);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe(flow.params.state);
  });

  it('narrows by scope: read is GET only, admin is needed for owner-only operations and only an owner grants it', async () => {
    const app = await registerApp(false);
    const readFlow = await startFlow(app, 'read');
    const read = await exchange(readFlow, await consent(owner.access, readFlow.params));
    expect((await call(read.access_token, 'GET', '/v1.3/statuses')).statusCode).toBe(200);
    const post = await call(read.access_token, 'POST', '/v1.3/leads', {});
    expect(post.statusCode).toBe(403);
    expect(post.json().code).toBe('insufficient_scope');
    // A refresh cannot widen the grant.
    expect(await tokenError(refresh(readFlow, read.refresh_token!, 'read write'))).toBe('invalid_scope');

    const writeFlow = await startFlow(app, 'read write');
    const write = await exchange(writeFlow, await consent(owner.access, writeFlow.params));
    const noAdmin = await call(write.access_token, 'POST', '/v1.3/statuses', { name: 'From the app', type: 'active' });
    expect(noAdmin.json().code).toBe('insufficient_scope');
    // Speaking for another employee is an owner power too.
    const someone = await createManager(h, owner);
    const lead = await createLead(h, owner.accountId, await createIntegration(h, owner.accountId), {
      userId: owner.userId,
      statusType: 'active',
    });
    const asOther = await call(write.access_token, 'POST', `/v1.3/messaging/${lead.leadId}/send`, {
      message: { text: 'hi' },
      userId: someone.userId,
    });
    expect(asOther.json().code).toBe('insufficient_scope');

    const adminFlow = await startFlow(app, 'read write admin');
    const admin = await exchange(adminFlow, await consent(owner.access, adminFlow.params));
    expect((await call(admin.access_token, 'POST', '/v1.3/statuses', { name: 'From the app', type: 'active' })).statusCode).toBe(200);
    // Credentials stay with a signed-in person, whatever the scope.
    expect((await call(admin.access_token, 'POST', '/v1.3/account/me/api-keys', { name: 'k' })).statusCode).toBe(403);
    expect((await call(admin.access_token, 'GET', '/v1.3/oauth/apps')).statusCode).toBe(403);

    const manager = await createManager(h, owner);
    const escalate = await consent(manager.access, adminFlow.params);
    expect(escalate.searchParams.get('error')).toBe('invalid_scope');
  });

  it("a manager's token sees what the manager sees, and ends when the manager is deleted", async () => {
    const integration = await createIntegration(h, owner.accountId);
    // Limited to this integration, so leads other tests leave in the account's inbox stay out of sight.
    const manager = await createManager(h, owner, { sources: [integration] });
    const mine = await createLead(h, owner.accountId, integration, { userId: manager.userId, statusType: 'active' });
    await createLead(h, owner.accountId, integration, { userId: owner.userId, statusType: 'active' });
    const flow = await startFlow(await registerApp(false));
    const tokens = await exchange(flow, await consent(manager.access, flow.params));
    const me = await call(tokens.access_token, 'GET', '/v1.3/account/me');
    expect(me.json().user).toMatchObject({ id: manager.userId, role: 'manager' });
    const leads = await call(tokens.access_token, 'GET', '/v1.3/leads?list=all');
    expect(leads.json().map((l: { id: number }) => l.id)).toEqual([mine.leadId]);

    expect((await h.request({ method: 'DELETE', url: `/v1.3/managers/${manager.userId}`, token: owner.access })).statusCode).toBe(200);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, tokens.refresh_token!))).toBe('invalid_grant');
  });

  it('signing out everywhere ends the apps the employee authorized', async () => {
    const manager = await createManager(h, owner);
    const flow = await startFlow(await registerApp(false));
    const tokens = await exchange(flow, await consent(manager.access, flow.params));
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(200);
    expect((await h.request({ method: 'DELETE', url: '/v1.3/auth/sessions', token: manager.access })).statusCode).toBe(200);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, tokens.refresh_token!))).toBe('invalid_grant');
  });

  it('deleting an app ends its tokens; apps of another account do not exist', async () => {
    const app = await registerApp(false);
    const flow = await startFlow(app);
    const tokens = await exchange(flow, await consent(owner.access, flow.params));
    const other = await h.signUp();
    const foreign = await h.request({
      method: 'POST',
      url: '/v1.3/oauth/authorize',
      token: other.access,
      payload: { ...flow.params, allowed: true },
    });
    expect(foreign.json().code).toBe('invalid_client');
    expect((await h.request({ method: 'DELETE', url: `/v1.3/oauth/apps/${app.id}`, token: other.access })).statusCode).toBe(404);

    expect((await h.request({ method: 'DELETE', url: `/v1.3/oauth/apps/${app.id}`, token: owner.access })).statusCode).toBe(200);
    expect((await call(tokens.access_token, 'GET', '/v1.3/account/me')).statusCode).toBe(401);
    expect(await tokenError(refresh(flow, tokens.refresh_token!))).toBe('invalid_client');
  });
});
