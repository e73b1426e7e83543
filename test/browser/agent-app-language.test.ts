import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { en } from '../../web/app/src/i18n/en.js';
import { ru } from '../../web/app/src/i18n/ru.js';
import { ru as serverRu } from '../../src/i18n/ru.js';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import {
  call,
  decodeBody,
  ensureAppBuilt,
  expectNoSeriousAxe,
  type ReceivedMail,
  type ServerProcess,
  signInForm,
  startServer,
  startSmtp,
} from './agent-app-support.js';

/**
 * Choosing the language where there is no employee yet (first-run sign-up, sign-in, invitation):
 * the pick shows at once, survives a reload and becomes the employee's `locale` at sign-in; a failed
 * save of the language says so and goes back; and the site widget's settings form, whose language
 * set to Russian makes the widget on an English page speak Russian. Against the real server.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const localStorage: any;

const OWNER = { name: 'Ольга', login: 'olga@example.com', pass: 'correct horse 1' };
const MANAGER = { name: 'Иван', login: 'ivan@example.com', pass: 'battery staple 2' };
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
let server: ServerProcess;
let smtp: Awaited<ReturnType<typeof startSmtp>>['server'];
const mails: ReceivedMail[] = [];
let database: TestDatabase | undefined;
let dataDir: string;
let browser: Browser;
let site: http.Server;
let siteBase: string;

beforeAll(async () => {
  await ensureAppBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-lang-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  const mail = await startSmtp(mails);
  smtp = mail.server;
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    PARLEY_LOGIN_MAX_PER_IP: '1000',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  // An English shop's page with the widget of the key in its query.
  site = http.createServer((req, res) => {
    const key = new URL(req.url ?? '/', 'http://x').searchParams.get('key')?.replace(/[^A-Za-z0-9_-]/g, '') ?? '';
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(
      `<!doctype html><html lang="en"><head><title>Shop</title></head><body><h1>Our English shop</h1>` +
        `<script src="${server.base}/widget.js" data-parley-key="${key}" async></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteBase = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
  await server?.stop();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function englishPage(): Promise<Page> {
  const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('dialog', (d) => void d.accept());
  return page;
}

async function ownerToken(): Promise<string> {
  const res = await call(server.base, 'POST', '/v1.3/auth/login', { body: { login: OWNER.login, pass: OWNER.pass } });
  expect(res.status).toBe(200);
  return res.body.accessToken.token;
}

const me = async (token: string) => (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user;

describe('choosing the language before sign-in', () => {
  it('the first-run sign-up screen switches at once; the account and its owner are born in the picked language', async () => {
    const page = await englishPage();
    await page.goto(`${server.base}/`);
    await page.getByRole('heading', { name: en['auth.setup.title'] }).waitFor();
    await page.getByLabel(en['language.label']).selectOption('ru');
    await page.getByRole('heading', { name: ru['auth.setup.title'] }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('ru');
    await expectNoSeriousAxe(page, 'sign-up in Russian');
    await page.fill('input[name=name]', OWNER.name);
    await page.fill('input[name=login]', OWNER.login);
    await page.fill('input[name=pass]', OWNER.pass);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/inbox$/);
    await page.getByRole('navigation').getByRole('link', { name: ru['nav.inbox'] }).waitFor();
    const token = await ownerToken();
    expect((await me(token)).locale).toBe('ru');
    const statuses = (await call(server.base, 'GET', '/v1.3/statuses', { token })).body.map((s: { name: string }) => s.name);
    expect(statuses).toContain(serverRu.defaultStatuses.new);
    await page.context().close();
  });

  it('the sign-in screen: the pick survives a reload and becomes the stored choice at sign-in', async () => {
    const token = await ownerToken();
    expect((await call(server.base, 'PUT', `/v1.3/managers/${(await me(token)).id}`, { token, body: { locale: 'en' } })).status).toBe(200);
    const page = await englishPage();
    await page.goto(`${server.base}/login`);
    await page.getByRole('heading', { name: en['auth.login.title'] }).waitFor();
    await page.getByLabel(en['language.label']).selectOption('ru');
    await page.getByRole('heading', { name: ru['auth.login.title'] }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: ru['auth.login.title'] }).waitFor();
    await expectNoSeriousAxe(page, 'sign-in in Russian');
    await signInForm(page, OWNER.login, OWNER.pass);
    await page.getByRole('navigation').getByRole('link', { name: ru['nav.inbox'] }).waitFor();
    await expect.poll(async () => (await me(token)).locale).toBe('ru');
    await expect.poll(() => page.evaluate(() => localStorage.getItem('parley.locale.picked'))).toBeNull();
    await page.context().close();
  });

  it('the invitation screen: the invitee picks Russian over the invitation language and keeps it', async () => {
    const token = await ownerToken();
    const invited = await call(server.base, 'POST', '/v1.3/managers', { token, body: { login: MANAGER.login, locale: 'en' } });
    expect(invited.status).toBe(200);
    await expect.poll(() => mails.length, { timeout: 10_000 }).toBe(1);
    const inviteToken = /invite\?token=([A-Za-z0-9_-]+)/.exec(decodeBody(mails[0]!.raw))![1];
    const page = await englishPage();
    await page.goto(`${server.base}/invite?token=${inviteToken}`);
    await page.getByRole('heading', { name: en['auth.invite.title'] }).waitFor();
    await page.getByLabel(en['language.label']).selectOption('ru');
    await page.getByRole('heading', { name: ru['auth.invite.title'] }).waitFor();
    await page.fill('input[name=name]', MANAGER.name);
    await page.fill('input[name=pass]', MANAGER.pass);
    await page.click('button[type=submit]');
    await page.getByRole('navigation').getByRole('link', { name: ru['nav.inbox'] }).waitFor();
    await expect
      .poll(async () => {
        const list = (await call(server.base, 'GET', '/v1.3/managers', { token })).body as Array<{ login: string; locale: string }>;
        return list.find((m) => m.login === MANAGER.login)?.locale;
      })
      .toBe('ru');
    await page.context().close();
  });
});

describe('saving the language', () => {
  it('a refused save shows an error toast and goes back to the stored language', async () => {
    const token = await ownerToken();
    const page = await englishPage();
    await page.goto(`${server.base}/login`);
    await signInForm(page, OWNER.login, OWNER.pass);
    const nav = page.getByRole('navigation');
    await nav.getByRole('link', { name: ru['nav.inbox'] }).waitFor();
    // The server refuses the change (as it would a role it does not allow).
    await page.route('**/v1.3/managers/*', (route) =>
      route.request().method() === 'PUT'
        ? route.fulfill({ status: 403, contentType: 'application/json', body: JSON.stringify({ error: 'Forbidden', code: 'forbidden' }) })
        : route.continue(),
    );
    await page.getByLabel(ru['language.label']).selectOption('en');
    const toast = page.locator('[data-language-error]');
    await toast.waitFor();
    expect(await toast.locator('p').textContent()).toBe(ru['language.saveFailed'].replace('{message}', ru['error.forbidden']));
    expect(await page.getByLabel(ru['language.label']).inputValue()).toBe('ru');
    await nav.getByRole('link', { name: ru['nav.inbox'] }).waitFor();
    expect((await me(token)).locale).toBe('ru');
    await toast.getByRole('button', { name: ru['notes.dismiss'] }).click();
    await toast.waitFor({ state: 'detached' });
    // Once the server takes it again, the switch works and stores the choice.
    await page.unroute('**/v1.3/managers/*');
    await page.getByLabel(ru['language.label']).selectOption('en');
    await nav.getByRole('link', { name: en['nav.inbox'] }).waitFor();
    await expect.poll(async () => (await me(token)).locale).toBe('en');
    await call(server.base, 'PUT', `/v1.3/managers/${(await me(token)).id}`, { token, body: { locale: 'ru' } });
    await page.context().close();
  });
});

describe("the site widget's settings form", () => {
  it('refuses a bad site naming the field and storing nothing; set to Russian, the widget on an English page speaks Russian', async () => {
    const token = await ownerToken();
    const widget = (await call(server.base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } })).body;
    const id: number = widget.id;
    const page = await englishPage();
    await page.goto(`${server.base}/login`);
    await signInForm(page, OWNER.login, OWNER.pass);
    await page.goto(`${server.base}/settings/integrations`);
    const card = page.locator(`li[data-integration="${id}"]`);
    await card.getByRole('button', { name: ru['widgetSettings.open'] }).click();
    const form = card.locator('form[data-widget-settings]');
    await form.waitFor();
    await form.getByLabel(ru['widgetSettings.language']).selectOption('ru');
    await form.getByLabel(ru['widgetSettings.allowedOrigins']).fill('not a site');
    await form.getByRole('button', { name: ru['app.save'] }).click();
    await expect
      .poll(() => form.getByRole('alert').textContent())
      .toBe(ru['widgetSettings.refused'].replace('{fields}', ru['widgetSettings.allowedOrigins']));
    expect(await form.getByLabel(ru['widgetSettings.allowedOrigins']).getAttribute('aria-invalid')).toBe('true');
    expect((await call(server.base, 'GET', `/v1.3/integrations/${id}/widget`, { token })).body.settings.language).toBe('auto');

    await form.getByLabel(ru['widgetSettings.allowedOrigins']).fill('');
    await form.getByRole('button', { name: ru['app.save'] }).click();
    await form.getByRole('status').filter({ hasText: ru['app.saved'] }).waitFor();
    expect((await call(server.base, 'GET', `/v1.3/integrations/${id}/widget`, { token })).body.settings.language).toBe('ru');
    await expectNoSeriousAxe(page, 'widget settings');
    await page.context().close();

    const visitor = await englishPage();
    await visitor.goto(`${siteBase}/?key=${widget.widget.key}`);
    await visitor.locator('#parley-widget[data-state=ready]').waitFor({ state: 'attached' });
    expect(await visitor.locator('#parley-widget').getAttribute('lang')).toBe('ru');
    await visitor.locator('#parley-widget button.launcher').click();
    await visitor.locator('#parley-widget form.prechat').waitFor();
    const texts = await visitor.locator('#parley-widget').evaluate((host: any) => host.shadowRoot.textContent as string);
    expect(texts).toContain(serverRu.widget.start);
    expect(texts).toContain(serverRu.widget.title);
    await visitor.context().close();
  });
});
