import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import * as oauth from 'oauth4webapi';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { call, launchChromium, root, startServer, type ServerProcess } from './agent-app-support.js';

/**
 * The consent screen in a real browser against the real server: a third-party app (a loopback
 * callback of this test, driven by oauth4webapi) sends the browser to /oauth/authorize; the
 * employee signs in, sees the app and its scopes, allows; the app gets a code and exchanges it.
 * Then the employee revokes the app under Settings > Connected apps.
 */
const OWNER = { name: 'Ada Owner', login: 'ada-oauth@example.com', pass: 'correct horse 1' };

let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let page: Page;
let callback: http.Server;
let redirectUri: string;
const received: string[] = [];

beforeAll(async () => {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-oauth-app-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({ PARLEY_DATA_DIR: dataDir, ...(database?.url ? { DATABASE_URL: database.url } : {}) });
  callback = http.createServer((req, res) => {
    received.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Connected</h1>');
  });
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve));
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/cb`;
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise((resolve) => (callback ? callback.close(resolve) : resolve(undefined)));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the OAuth consent screen', () => {
  it('signs in, shows the app and scopes, allows, and the app gets working tokens; Connected apps revokes them', async () => {
    const reg = await call(server.base, 'POST', '/v1.3/auth/register', { body: OWNER });
    const session = reg.body.accessToken.token as string;
    const app = await call(server.base, 'POST', '/v1.3/oauth/apps', {
      token: session,
      body: { name: 'Acme CRM', redirectUris: [redirectUri], confidential: false },
    });
    expect(app.status).toBe(200);

    const insecure = { [oauth.allowInsecureRequests]: true };
    const issuer = new URL(server.base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    const client: oauth.Client = { client_id: app.body.clientId };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizeUrl = new URL(as.authorization_endpoint!);
    authorizeUrl.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'read write',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    await page.goto(authorizeUrl.href);
    await page.getByRole('heading', { name: 'Sign in to Parley' }).waitFor();
    await page.fill('input[name=login]', OWNER.login);
    await page.fill('input[name=pass]', OWNER.pass);
    await page.click('button[type=submit]');
    await page.getByRole('heading', { name: 'Allow Acme CRM to use your Parley account?' }).waitFor();
    const scopes = await page.getByRole('list', { name: 'Requested permissions' }).locator('li').allTextContents();
    expect(scopes).toHaveLength(2);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));

    const cb = oauth.validateAuthResponse(as, client, new URL(page.url()), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), cb, redirectUri, verifier, insecure),
    );
    const me = await call(server.base, 'GET', '/v1.3/account/me', { token: tokens.access_token });
    expect(me.body.user).toMatchObject({ login: OWNER.login, role: 'owner' });
    expect(received.filter((u) => u.startsWith('/cb?'))).toHaveLength(1);

    await page.goto(`${server.base}/settings/connected-apps`);
    await page.getByText('Acme CRM').waitFor();
    await page.getByRole('button', { name: 'Revoke access' }).click();
    await page.getByText('No app acts for you.').waitFor();
    expect((await call(server.base, 'GET', '/v1.3/account/me', { token: tokens.access_token })).status).toBe(401);
  });

  it('a denial goes back to the app as access_denied', async () => {
    const session = (await call(server.base, 'POST', '/v1.3/auth/login', { body: { login: OWNER.login, pass: OWNER.pass } })).body
      .accessToken.token;
    const app = await call(server.base, 'POST', '/v1.3/oauth/apps', {
      token: session,
      body: { name: 'Other app', redirectUris: [redirectUri], confidential: true },
    });
    const url = `${server.base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: app.body.clientId, redirect_uri: redirectUri, state: 's1' })}`;
    await page.goto(url);
    await page.getByRole('heading', { name: 'Allow Other app to use your Parley account?' }).waitFor();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    const back = new URL(page.url());
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe('s1');
  });

  it('shows an unknown app as an error and never redirects', async () => {
    await page.goto(
      `${server.base}/oauth/authorize?response_type=code&client_id=nope&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
    );
    await page.getByRole('heading', { name: 'This authorization request cannot be completed' }).waitFor();
    expect(page.url()).toContain(server.base);
  });
});
