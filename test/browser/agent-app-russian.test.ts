import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { en } from '../../web/app/src/i18n/en.js';
import { ru } from '../../web/app/src/i18n/ru.js';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { call, ensureAppBuilt, startServer, type ServerProcess } from './agent-app-support.js';

/**
 * A Russian-speaking team's day in the agent app with a ru-RU browser, against the real server:
 * sign-in, the inbox with a conversation, answering, the funnel, reports and the integrations
 * settings show no English interface text (every rendered text and label is checked against the
 * English catalogue); switching to English and back without a reload; the stored choice wins over
 * the browser's.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const window: any;

const OWNER = { name: 'Ольга', login: 'olga@example.com', pass: 'correct horse 1' };
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: Browser;
let token: string;
let ownerId: number;
let leadId: number;

/**
 * English texts that differ from the Russian ones and carry no placeholders: none may appear on
 * screen, but for the language switch naming English in English.
 */
const ENGLISH = new Set(
  (Object.keys(en) as Array<keyof typeof en>)
    .filter((k) => k !== 'language.name' && en[k] !== ru[k] && !en[k].includes('{'))
    .map((k) => en[k].trim()),
);

async function englishOnScreen(page: Page): Promise<string[]> {
  const texts: string[] = await page.evaluate(() => {
    const out: string[] = [];
    const walk = (root: any) => {
      for (const el of root.querySelectorAll('*')) {
        if (el.tagName === 'SCRIPT' || el.tagName === 'STYLE') continue;
        for (const attr of ['aria-label', 'placeholder', 'title', 'alt']) {
          const v = el.getAttribute(attr);
          if (v) out.push(v.trim());
        }
        for (const node of el.childNodes) if (node.nodeType === 3 && node.textContent.trim()) out.push(node.textContent.trim());
      }
    };
    walk(document);
    return out;
  });
  return texts.filter((t) => ENGLISH.has(t));
}

beforeAll(async () => {
  await ensureAppBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-ru-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({ PARLEY_DATA_DIR: dataDir, ...(database?.url ? { DATABASE_URL: database.url } : {}) });
  // The owner signs up from a Russian browser: the account's default statuses are named in Russian.
  token = (await call(server.base, 'POST', '/v1.3/auth/register', { body: { ...OWNER, locale: 'ru' } })).body.accessToken.token;
  ownerId = (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user.id;
  const widget = await call(server.base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key: widget.body.widget.key, name: 'Пётр' } });
  const sent = await fetch(`${server.base}/widget/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'ru-1', text: 'Здравствуйте, есть доставка в Казань?' }),
  });
  expect(sent.status).toBe(200);
  leadId = (await call(server.base, 'GET', '/v1.3/leads/inbox', { token })).body[0].id;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function russianPage(): Promise<Page> {
  const context = await browser.newContext({ locale: 'ru-RU', viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return page;
}

async function signIn(page: Page) {
  await page.fill('input[name=login]', OWNER.login);
  await page.fill('input[name=pass]', OWNER.pass);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/inbox$/);
}

describe('the agent app in Russian', () => {
  it('a ru-RU browser meets no English interface text through a working day', async () => {
    const page = await russianPage();
    await page.goto(`${server.base}/login`);
    await page.getByRole('heading', { name: 'Вход в Parley' }).waitFor();
    expect(await englishOnScreen(page)).toEqual([]);
    await signIn(page);

    await page.getByRole('link', { name: 'Входящие' }).waitFor();
    await page.locator(`.lead-row[data-lead-id="${leadId}"]`).click();
    await page.getByText('Здравствуйте, есть доставка в Казань?').waitFor();
    expect(await englishOnScreen(page)).toEqual([]);

    const box = page.locator('textarea.composer-input');
    await box.fill('Да, доставим за два дня.');
    await box.press('Enter');
    await page.locator('.msg, [data-message-id], .message', { hasText: 'Да, доставим за два дня.' }).first().waitFor();
    expect(await englishOnScreen(page)).toEqual([]);

    // Through the app's own navigation, as a user moves.
    const nav = page.getByRole('navigation', { name: 'Главное меню' });
    for (const [link, heading] of [
      ['Воронка', 'Воронка'],
      ['Отчёты', 'Отчёты'],
      ['Настройки', 'Статусы'],
    ]) {
      await nav.getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: heading }).first().waitFor();
      await page.waitForLoadState('networkidle');
      expect(await englishOnScreen(page), link).toEqual([]);
    }
    await page.getByRole('link', { name: 'Интеграции' }).click();
    await page.getByRole('heading', { name: 'Интеграции' }).first().waitFor();
    await page.waitForLoadState('networkidle');
    expect(await englishOnScreen(page), 'integrations').toEqual([]);
    await page.context().close();
  });

  it('every settings page, the widget settings form and the shortcuts help speak Russian', async () => {
    const page = await russianPage();
    await page.goto(`${server.base}/login`);
    await signIn(page);
    await page.getByRole('navigation', { name: 'Главное меню' }).getByRole('link', { name: 'Настройки' }).click();
    const sections: Array<keyof typeof ru> = [
      'settings.statuses',
      'settings.employees',
      'settings.templates',
      'settings.tags',
      'settings.paymentTypes',
      'settings.integrations',
      'settings.webhooks',
      'settings.apiKeys',
      'settings.plugins',
      'settings.oauthApps',
      'settings.connectedApps',
      'settings.account',
    ];
    for (const key of sections) {
      await page.getByRole('link', { name: ru[key], exact: true }).first().click();
      await page.locator('#settings-title', { hasText: ru[key] }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await englishOnScreen(page), key).toEqual([]);
    }
    // The widget's settings form on the integrations page, then the shortcuts help dialog.
    await page.getByRole('link', { name: ru['settings.integrations'], exact: true }).first().click();
    await page.getByRole('button', { name: ru['widgetSettings.open'] }).first().click();
    await page.locator('form[data-widget-settings]').waitFor();
    expect(await englishOnScreen(page), 'widget settings').toEqual([]);
    await page.keyboard.press('Escape');
    await page.locator('body').press('?');
    await page.getByRole('dialog').waitFor();
    expect(await englishOnScreen(page), 'shortcuts help').toEqual([]);
    await page.context().close();
  });

  it('switches to English and back at once, without a reload, and keeps the choice on the server', async () => {
    const page = await russianPage();
    await page.goto(`${server.base}/login`);
    await signIn(page);
    await page.evaluate(() => (window.sameDocument = true));
    const nav = page.getByRole('navigation');
    await page.getByLabel('Язык').selectOption('en');
    await nav.getByRole('link', { name: 'Inbox' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.lang)).toBe('en');
    await expect.poll(async () => (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user.locale).toBe('en');
    await page.getByLabel('Language').selectOption('ru');
    await nav.getByRole('link', { name: 'Входящие' }).waitFor();
    expect(await page.evaluate(() => window.sameDocument)).toBe(true);
    await expect.poll(async () => (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user.locale).toBe('ru');
    await page.context().close();
  });

  it("the employee's stored choice wins over the browser's", async () => {
    await call(server.base, 'PUT', `/v1.3/managers/${ownerId}`, { token, body: { locale: 'en' } });
    const page = await russianPage();
    await page.goto(`${server.base}/login`);
    // Before sign-in the browser's language speaks.
    await page.getByRole('heading', { name: 'Вход в Parley' }).waitFor();
    await signIn(page);
    await page.getByRole('navigation').getByRole('link', { name: 'Inbox' }).waitFor();
    expect(await page.getByLabel('Language').inputValue()).toBe('en');
    await page.context().close();
    await call(server.base, 'PUT', `/v1.3/managers/${ownerId}`, { token, body: { locale: 'ru' } });
  });
});
