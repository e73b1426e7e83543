import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import type { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import {
  call,
  ensureAppBuilt,
  decodeBody,
  launchChromium,
  setUpFirstAccount,
  OUTPUT,
  startServer,
  startSmtp,
  type ReceivedMail,
  type ServerProcess,
} from './agent-app-support.js';

/**
 * The agent web app in a real browser against the real server process: first-run setup, sign-in,
 * a widget visitor's message appearing live in the inbox (timed), a reply reaching the visitor,
 * a funnel drag, the statuses settings and an invitation through a local SMTP server.
 */
// Functions passed to page.evaluate run in the page: its globals, typed loosely here (no DOM lib in the test tsconfig).
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any;
declare const document: any;
declare const MutationObserver: any;

const OWNER = { name: 'Ada Owner', login: 'ada@example.com', pass: 'correct horse 1' };

let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let smtp: SMTPServer;
const mails: ReceivedMail[] = [];
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let token: string;
const state: { leadId?: number; visitorToken?: string; widgetKey?: string } = {};

beforeAll(async () => {
  const gzipped = await ensureAppBuilt();
  expect(gzipped).toBeLessThan(250 * 1024);

  fs.mkdirSync(OUTPUT, { recursive: true });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-app-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  const mail = await startSmtp(mails);
  smtp = mail.server;
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const shot = (name: string) => page.screenshot({ path: path.join(OUTPUT, `agent-app-${name}.png`) });

async function signInApi() {
  const res = await call(server.base, 'POST', '/v1.3/auth/login', { body: { login: OWNER.login, pass: OWNER.pass } });
  expect(res.status).toBe(200);
  token = res.body.accessToken.token;
}

/** The app's realtime stream is connected (the "reconnecting" mark is gone). */
async function live() {
  await page.locator('.topbar').waitFor();
  await page.locator('.live-state').waitFor({ state: 'detached', timeout: 10_000 });
}

describe('the agent app in a browser', () => {
  it('serves the app to browsers and JSON to other clients without shadowing the API', async () => {
    const html = await fetch(`${server.base}/`, { headers: { accept: 'text/html' } });
    expect(await html.text()).toContain('<div id="root">');
    expect(await (await fetch(`${server.base}/`)).json()).toMatchObject({ status: 'ok' });
    const deep = await fetch(`${server.base}/leads/5`, { headers: { accept: 'text/html' } });
    expect(deep.status).toBe(200);
    expect((await fetch(`${server.base}/v1.3/leads/5`)).status).toBe(401);
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect((await call(server.base, 'GET', '/v1.3/auth/setup')).body).toEqual({ firstRun: true, signup: 'closed' });
  });

  it('first-run setup creates the owner and opens the inbox', async () => {
    await setUpFirstAccount(page, server.base, OWNER);
    await live();
    await signInApi();
    const me = await call(server.base, 'GET', '/v1.3/account/me', { token });
    expect(me.body.user).toMatchObject({ login: OWNER.login, role: 'owner', name: OWNER.name });
    expect((await call(server.base, 'GET', '/v1.3/auth/setup')).body.firstRun).toBe(false);
  });

  it('signs out, refuses a wrong password and signs in', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to Parley' }).waitFor();
    await page.fill('input[name=login]', OWNER.login);
    await page.fill('input[name=pass]', 'wrong password');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('[role=alert]').textContent()).toContain('Wrong e-mail or password');
    await page.fill('input[name=pass]', OWNER.pass);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/inbox$/);
    await live();
  });

  it('connects a widget in the settings and shows its snippet', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('button', { name: 'Connect: Site chat' }).click();
    await page.locator('[data-connect-form="widget"]').getByRole('button', { name: 'Connect', exact: true }).click();
    const snippet = await page.locator('[data-snippet]').textContent();
    const key = /data-parley-key="([^"]+)"/.exec(snippet ?? '')?.[1];
    expect(key).toMatch(/^wk_/);
    state.widgetKey = key;
  });

  it('a widget visitor writes and the lead appears live in the open inbox', async () => {
    await page.getByRole('link', { name: 'Inbox' }).click();
    await live();
    const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key: state.widgetKey, name: 'Grace Visitor' } });
    expect(session.status, JSON.stringify(session.body)).toBe(200);
    state.visitorToken = session.body.token;

    // Timed from just before the visitor's POST to the moment the text is in the list's DOM.
    const measure = async (marker: string) => {
      await page.evaluate((m) => {
        const w = window as unknown as { __seen?: number };
        delete w.__seen;
        const check = () => {
          if (w.__seen) return;
          for (const el of document.querySelectorAll('.lead-preview') as any[]) if (el.textContent?.includes(m)) w.__seen = Date.now();
        };
        new MutationObserver(check).observe(document.body, { childList: true, subtree: true, characterData: true });
      }, marker);
      const sentAt = Date.now();
      const res = await fetch(`${server.base}/widget/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${state.visitorToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ clientId: `c${sentAt}`, text: marker }),
      });
      expect(res.status).toBe(200);
      await page.waitForFunction(() => !!(window as unknown as { __seen?: number }).__seen, undefined, { timeout: 10_000 });
      return (await page.evaluate(() => (window as unknown as { __seen: number }).__seen)) - sentAt;
    };
    const newLeadMs = await measure('Hello, do you ship to Lisbon?');
    const nextMessageMs = await measure('Also, is it free?');
    console.log(`agent app: visitor message -> open inbox: ${newLeadMs} ms (new lead), ${nextMessageMs} ms (next message)`);
    expect(nextMessageMs).toBeLessThan(2000);

    const inbox = await call(server.base, 'GET', '/v1.3/leads/inbox', { token });
    expect(inbox.body).toHaveLength(1);
    state.leadId = inbox.body[0].id;
    await expect.poll(() => page.locator('.tab[data-list=inbox] .count').textContent()).toBe('1');
    await expect.poll(() => page.locator('.lead-row .badge').textContent()).toBe('2');
    await shot('inbox');
  });

  it('a reply from the app reaches the widget visitor', async () => {
    await page.locator(`.lead-row[data-lead-id="${state.leadId}"]`).click();
    await page.waitForURL(new RegExp(`/leads/${state.leadId}$`));
    await page.locator('.msg.in', { hasText: 'Also, is it free?' }).waitFor();
    const box = page.locator('textarea.composer-input');
    await box.fill('Yes, shipping to Lisbon is free.');
    await box.press('Enter');
    await page.locator('.msg.out:not(.pending)', { hasText: 'Yes, shipping to Lisbon is free.' }).waitFor();
    await expect.poll(() => box.inputValue()).toBe('');
    const history = await fetch(`${server.base}/widget/v1/messages`, { headers: { authorization: `Bearer ${state.visitorToken}` } });
    const { messages } = (await history.json()) as { messages: Array<{ from: string; text: string }> };
    expect(messages.some((m) => m.from === 'agent' && m.text === 'Yes, shipping to Lisbon is free.')).toBe(true);
    // The opened lead was marked read.
    await expect.poll(async () => (await call(server.base, 'GET', `/v1.3/leads/${state.leadId}`, { token })).body.read).toBe(true);
    await shot('conversation');
    await page.locator('.lead-panel').getByRole('button', { name: 'Close' }).click();
    await page.setViewportSize({ width: 360, height: 740 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await shot('conversation-360-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: 'Lead details' }).click();
  });

  it('accepting the lead and dragging it on the funnel changes its status', async () => {
    await page.locator('.lead-panel').getByRole('button', { name: 'Accept' }).click();
    await expect.poll(async () => (await call(server.base, 'GET', `/v1.3/leads/${state.leadId}`, { token })).body.statusId).not.toBeNull();
    const statuses = (await call(server.base, 'GET', '/v1.3/statuses', { token })).body as Array<{
      id: number;
      type: string;
      order: number;
    }>;
    const active = statuses.filter((s) => s.type === 'active').sort((a, b) => a.order - b.order);
    const before = (await call(server.base, 'GET', `/v1.3/leads/${state.leadId}`, { token })).body.statusId;
    expect(before).toBe(active[0]!.id);
    const target = statuses.find((s) => s.type === 'completed')!;

    await page.getByRole('link', { name: 'Funnel' }).click();
    const card = page.locator(`.card[data-lead-id="${state.leadId}"]`);
    await card.waitFor();
    expect(await card.evaluate((el: any) => el.closest('[data-status-id]').dataset.statusId)).toBe(String(before));
    const from = (await card.locator('p').boundingBox())!;
    const column = page.locator(`.column[data-status-id="${target.id}"]`);
    await column.scrollIntoViewIfNeeded();
    const to = (await column.boundingBox())!;
    const start = (await card.locator('p').boundingBox())!;
    await page.mouse.move(start.x + 10, start.y + 5);
    await page.mouse.down();
    await page.mouse.move(start.x + 40, start.y + 30, { steps: 4 });
    await page.mouse.move(to.x + to.width / 2, to.y + 80, { steps: 8 });
    await shot('funnel-dragging');
    await page.mouse.up();
    void from;
    await expect.poll(async () => (await call(server.base, 'GET', `/v1.3/leads/${state.leadId}`, { token })).body.statusId).toBe(target.id);
    await page.locator(`.column[data-status-id="${target.id}"] .card[data-lead-id="${state.leadId}"]`).waitFor();
    await shot('funnel');
  });

  it('statuses settings: add, rename, reorder and delete round trip through the API', async () => {
    await page.goto(`${server.base}/settings/statuses`);
    await page.locator('form[aria-label="Add a status"]').waitFor();
    await page.fill('input[name=status-name]', 'VIP');
    await page.selectOption('select[name=status-type]', 'active');
    await page.locator('form[aria-label="Add a status"] button[type=submit]').click();
    const list = async () =>
      (await call(server.base, 'GET', '/v1.3/statuses', { token })).body as Array<{
        id: number;
        name: string;
        type: string;
        order: number;
      }>;
    await expect.poll(async () => (await list()).some((s) => s.name === 'VIP' && s.type === 'active')).toBe(true);
    const vip = (await list()).find((s) => s.name === 'VIP')!;

    const row = page.locator(`[data-status-row="${vip.id}"]`);
    const name = row.locator('input[aria-label=Name]');
    await name.fill('VIP customers');
    await name.press('Enter');
    await expect.poll(async () => (await list()).find((s) => s.id === vip.id)?.name).toBe('VIP customers');

    // Reorder: move it to the top of its type with the keyboard-reachable arrow.
    const activeIds = async () =>
      (await list())
        .filter((s) => s.type === 'active')
        .sort((a, b) => a.order - b.order)
        .map((s) => s.id);
    // Where the page shows it: the next click acts on the order shown, so it waits for the page to
    // show the order the last one saved.
    const shownIndex = () =>
      page
        .locator('ol[data-type="active"] > li')
        .evaluateAll((rows, id) => rows.findIndex((r) => r.getAttribute('data-status-row') === String(id)), vip.id);
    const n = (await activeIds()).indexOf(vip.id);
    for (let i = 0; i < n; i++) {
      await row.getByRole('button', { name: 'Move VIP customers up' }).click();
      await expect.poll(async () => (await activeIds()).indexOf(vip.id)).toBe(n - i - 1);
      await expect.poll(shownIndex).toBe(n - i - 1);
    }
    await page.reload();
    await expect.poll(() => page.locator(`[data-status-row="${vip.id}"] input[aria-label=Name]`).inputValue()).toBe('VIP customers');
    await shot('settings');
    await page.locator(`[data-status-row="${vip.id}"]`).getByRole('button', { name: 'Delete' }).click();
    await expect.poll(async () => (await list()).some((s) => s.id === vip.id)).toBe(false);
  });

  it('an invitation goes out over SMTP and its link lets the employee join', async () => {
    await page.getByRole('link', { name: 'Employees' }).click();
    await page.fill('input[name=invite-email]', 'grace.manager@example.com');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText('Invitation sent to grace.manager@example.com').waitFor();
    await expect.poll(() => mails.filter((m) => m.to.includes('grace.manager@example.com')).length, { timeout: 10_000 }).toBe(1);
    const body = decodeBody(mails.find((m) => m.to.includes('grace.manager@example.com'))!.raw);
    const link = /(https?:\/\/[^\s"<]+\/invite\?token=[A-Za-z0-9_-]+)/.exec(body)?.[1];
    expect(link).toBeDefined();
    expect(link!.startsWith(server.base)).toBe(true);
    await page.locator('[data-employee="grace.manager@example.com"]').getByText('Invitation pending').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(link!);
    await page.getByRole('heading', { name: 'Join your team on Parley' }).waitFor();
    await page.fill('input[name=name]', 'Grace Manager');
    await page.fill('input[name=pass]', 'manager password 1');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/inbox$/);
    await expect.poll(() => page.locator('.whoami').textContent()).toBe('Grace Manager');
    // A manager's settings hold only its own connected apps (OAuth), none of the owner's sections.
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Connected apps' }).waitFor();
    expect(await page.getByRole('link', { name: 'Statuses' }).count()).toBe(0);
    const managers = (await call(server.base, 'GET', '/v1.3/managers', { token })).body as Array<{
      login: string;
      confirmed: boolean;
      name: string;
    }>;
    expect(managers.find((m) => m.login === 'grace.manager@example.com')).toMatchObject({ confirmed: true, name: 'Grace Manager' });
  });
});
