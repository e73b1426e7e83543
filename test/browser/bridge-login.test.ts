import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { FakeBridge } from '../helpers/fake-bridge.js';
import { call, launchChromium, root, startServer, type ServerProcess } from './agent-app-support.js';

/**
 * Connecting a personal account in the agent app, in a real browser against the real server and a
 * fake bridge: the token and connector command, the QR code drawn live, a code typed in the app
 * reaching the bridge, and the status once logged in.
 */
const OWNER = { name: 'Bea Owner', login: 'bea@example.com', pass: 'correct horse 2' };
let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let page: Page;
let bridge: FakeBridge | undefined;

beforeAll(async () => {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bridge-app-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({ PARLEY_DATA_DIR: dataDir, PARLEY_SIGNUP: 'open', ...(database?.url ? { DATABASE_URL: database.url } : {}) });
  browser = await launchChromium();
  page = await browser.context.newPage();
}, 180_000);

afterAll(async () => {
  await bridge?.close();
  await browser?.close();
  await server?.stop();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a personal account in the agent app', () => {
  it('shows the token and command, the QR code live, sends the typed code to the bridge, and shows the account active', async () => {
    expect((await call(server.base, 'POST', '/v1.3/auth/register', { body: OWNER })).status).toBe(200);
    await page.goto(`${server.base}/`);
    await page.getByRole('heading', { name: 'Sign in to Parley' }).waitFor();
    await page.fill('input[name=login]', OWNER.login);
    await page.fill('input[name=pass]', OWNER.pass);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/inbox$/);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('button', { name: 'Connect: Telegram account' }).click();
    await page.locator('[data-connect-form="msgrb_personal"]').getByRole('button', { name: 'Connect', exact: true }).click();

    const start = page.locator('[data-bridge-start]');
    const token = ((await start.locator('pre').first().textContent()) ?? '').trim();
    expect(token).toMatch(/^pbt_/);
    expect(await start.locator('pre').nth(1).textContent()).toContain(`parley bridge telegram --url ${server.base}`);
    const id = Number(/--integration (\d+)/.exec((await start.locator('pre').nth(1).textContent()) ?? '')?.[1]);

    bridge = await FakeBridge.connect(server.base, id, token);
    bridge.send({ type: 'login.qr', data: 'tg://login?token=AQIDBAUG', expiresAt: Date.now() + 60_000 });
    const qr = page.locator(`[data-bridge-login="${id}"] svg.qr`);
    await qr.waitFor({ timeout: 10_000 });
    expect(await qr.locator('path').getAttribute('d')).toMatch(/^M\d+ \d+h1v1h-1z/);

    bridge.send({ type: 'login.prompt', kind: 'code' });
    const codeInput = page.getByLabel('Login code');
    await codeInput.waitFor({ timeout: 10_000 });
    const answered = bridge.next((m) => m.type === 'login.answer');
    await codeInput.fill('24680');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    expect(await answered).toMatchObject({ kind: 'code', value: '24680' });

    // No reload: the list turns active from the login panel's poll (PersonalAccounts.tsx `onStatus`).
    await bridge.login({ login: 'bea_shop', externalId: '9001' });
    await page.locator(`[data-integration="${id}"] .tag.ok`).waitFor({ timeout: 10_000 });
    expect(await page.locator(`[data-integration="${id}"]`).textContent()).toContain('bea_shop');
  }, 60_000);
});
