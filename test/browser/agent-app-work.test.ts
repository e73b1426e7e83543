import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { call, ensureAppBuilt, launchChromium, signInForm, startServer, type ServerProcess } from './agent-app-support.js';

/**
 * Everyday work in the agent app that the other browser files leave out, against the real server
 * (one server and one browser for the file): reply templates by `/` and by hotkey, quoting a
 * message, uploading a file, the list filters, and the settings sections an owner configures once
 * (employees' access rules, webhooks with their delivery log, API keys, plugins).
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;

const OWNER = { name: 'Wanda Owner', login: 'wanda@example.com', pass: 'correct horse 1' };
let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let token: string;
let widgetKey: string;
let sent = 0;
const received: Array<{ type: string }> = [];
let receiver: http.Server;
let receiverUrl: string;

beforeAll(async () => {
  await ensureAppBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-work-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  // A webhook endpoint of our own on loopback: answers 200 and keeps what it got.
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      received.push(JSON.parse(body) as { type: string });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  token = (await call(server.base, 'POST', '/v1.3/auth/register', { body: OWNER })).body.accessToken.token;
  const widget = await call(server.base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  widgetKey = widget.body.widget.key;
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${server.base}/login`);
  await signInForm(page, OWNER.login, OWNER.pass);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** Moves the start of a lead's wait for an answer back to `at`, in the server's database. */
async function backdateWait(leadId: number, at: number): Promise<void> {
  if (database) {
    await database.db.kysely.updateTable('leads').set({ awaiting_since: at }).where('id', '=', leadId).execute();
    return;
  }
  const { default: Sqlite } = await import('better-sqlite3');
  const db = new Sqlite(path.join(dataDir, 'parley.db'));
  try {
    db.prepare('update leads set awaiting_since = ? where id = ?').run(at, leadId);
  } finally {
    db.close();
  }
}

async function visitor(name: string, text: string) {
  const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key: widgetKey, name } });
  const write = async (t: string) =>
    fetch(`${server.base}/widget/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: `w${++sent}`, text: t }),
    });
  expect((await write(text)).status).toBe(200);
  const inbox = (await call(server.base, 'GET', '/v1.3/leads/inbox?limit=200', { token })).body as Array<{
    id: number;
    customer: { name: string };
  }>;
  const history = async () =>
    (
      (await (await fetch(`${server.base}/widget/v1/messages`, { headers: { authorization: `Bearer ${session.body.token}` } })).json()) as {
        messages: any[];
      }
    ).messages;
  return { leadId: inbox.find((l) => l.customer.name === name)!.id, history };
}

describe('everyday work in the agent app', () => {
  it('templates: `/` searches and inserts a phrase, its hotkey inserts it too; a quoted reply and a file reach the visitor', async () => {
    const group = await call(server.base, 'POST', '/v1.3/templates', { token, body: { key: 'Shipping' } });
    await call(server.base, 'POST', `/v1.3/templates/${group.body.id}`, {
      token,
      body: { template: 'Delivery takes two days.', hotkey: 'Alt+1' },
    });
    const v = await visitor('Quinn Visitor', 'How long is delivery?');
    await page.reload();
    await page.locator(`.lead-row[data-lead-id="${v.leadId}"]`).click();
    const box = page.locator('textarea.composer-input');
    await box.click();
    await page.keyboard.type('/deliv');
    await page
      .getByRole('listbox', { name: 'Templates' })
      .getByRole('option', { name: /Delivery takes two days/ })
      .waitFor();
    await page.keyboard.press('Enter');
    await expect.poll(() => box.inputValue()).toBe('Delivery takes two days.');
    await box.fill('');
    await page.keyboard.press('Alt+1');
    await expect.poll(() => box.inputValue()).toBe('Delivery takes two days.');

    // Quote the visitor's question.
    await page.locator('.msg.in', { hasText: 'How long is delivery?' }).getByRole('button', { name: 'Reply' }).click();
    await page.getByText('Replying to: How long is delivery?').waitFor();
    await box.press('Enter');
    await page.locator('.msg.out:not(.pending) .quote', { hasText: 'How long is delivery?' }).waitFor();

    // Upload a file.
    await page
      .locator('.composer input[type=file], input[type=file]')
      .first()
      .setInputFiles({ name: 'price list.txt', mimeType: 'text/plain', buffer: Buffer.from('blue: 10 EUR') });
    await box.fill('Our prices');
    await box.press('Enter');
    await page.locator('.msg.out:not(.pending)', { hasText: 'Our prices' }).locator('a', { hasText: 'price list.txt' }).waitFor();
    await expect
      .poll(async () => (await v.history()).filter((m) => m.from === 'agent').map((m) => m.text))
      .toEqual(['Delivery takes two days.', 'Our prices']);
    const withFile = (await v.history()).find((m) => m.text === 'Our prices');
    expect(JSON.stringify(withFile)).toContain('price list.txt');
  });

  it('the list filters narrow the list (unanswered) and clearing them shows every lead again', async () => {
    const other = await visitor('Uma Visitor', 'Anyone there?');
    await page.goto(`${server.base}/inbox`);
    await page.locator(`.lead-row[data-lead-id="${other.leadId}"]`).waitFor();
    await page.getByRole('button', { name: 'Filters' }).click();
    await page.getByLabel('Reading').selectOption('answered');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator(`.lead-row[data-lead-id="${other.leadId}"]`).waitFor({ state: 'detached' });
    await expect.poll(() => page.locator('.lead-row').count()).toBe(1);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.locator(`.lead-row[data-lead-id="${other.leadId}"]`).waitFor();
  });

  it('the filter "waiting longer than the response target" shows only such leads, each with the time it has waited', async () => {
    const late = await visitor('Vera Waiting', 'Hello? Still waiting');
    const fresh = await visitor('Fred Fresh', 'Just wrote');
    // The customer of `late` wrote two hours ago: the stored start of their wait is moved back.
    await backdateWait(late.leadId, Date.now() - 2 * 3_600_000);
    expect((await call(server.base, 'PUT', '/v1.3/account/first-response-target', { token, body: { minutes: 60 } })).status).toBe(200);
    await page.goto(`${server.base}/inbox`);
    await page.locator(`.lead-row[data-lead-id="${fresh.leadId}"]`).waitFor();
    await page.getByRole('button', { name: 'Filters' }).click();
    await page.getByLabel('Waiting longer than the response target').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator(`.lead-row[data-lead-id="${fresh.leadId}"]`).waitFor({ state: 'detached' });
    const row = page.locator(`.lead-row[data-lead-id="${late.leadId}"]`);
    await row.waitFor();
    await expect.poll(() => row.getByTestId('waiting').textContent()).toContain('2');
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await page.locator(`.lead-row[data-lead-id="${fresh.leadId}"]`).waitFor();
    await call(server.base, 'PUT', '/v1.3/account/first-response-target', { token, body: { minutes: null } });
  });

  it('employees: access rules set in the settings are what the API answers', async () => {
    await call(server.base, 'POST', '/v1.3/managers', { token, body: { login: 'sam@example.com' } });
    await page.goto(`${server.base}/settings/employees`);
    const row = page.locator('[data-employee="sam@example.com"]');
    // Controlled boxes: they show the new state once the API answered, so click and read the API.
    await row.getByLabel('Sees all leads of its integrations').click();
    const sam = async () =>
      ((await call(server.base, 'GET', '/v1.3/managers', { token })).body as any[]).find((e) => e.login === 'sam@example.com');
    await expect.poll(async () => (await sam()).allowAllDeals).toBe(true);
    await row.getByLabel(OWNER.name).click();
    await expect.poll(async () => (await sam()).allowedUsers).toEqual([expect.any(Number)]);
  });

  it('webhooks: added in the settings, a lead change is delivered and shows in the delivery log', async () => {
    await page.goto(`${server.base}/settings/webhooks`);
    await page.getByLabel('URL').fill(receiverUrl);
    await page.getByLabel('Name').fill('CRM');
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await expect.poll(async () => (await call(server.base, 'GET', '/v1.3/webhooks', { token })).body.length).toBe(1);
    await visitor('Vera Visitor', 'Hi');
    await expect.poll(() => received.length, { timeout: 15_000 }).toBeGreaterThan(0);
    // The receiver answered; the outcome is recorded by the worker's next claim: wait for it, then open the log.
    const [hook] = (await call(server.base, 'GET', '/v1.3/webhooks', { token })).body;
    await expect
      .poll(
        async () =>
          ((await call(server.base, 'GET', `/v1.3/webhooks/${hook.id}/deliveries`, { token })).body as any[]).some(
            (d) => d.status === 'delivered',
          ),
        { timeout: 15_000 },
      )
      .toBe(true);
    await page.getByRole('button', { name: 'Delivery log' }).click();
    await page.getByText('delivered').first().waitFor();
  });

  it('API keys and plugins: a created key is shown once and works; a plugin gets its token', async () => {
    await page.goto(`${server.base}/settings/api-keys`);
    await page.getByLabel('Key name').fill('Reports export');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByRole('status').locator('pre').textContent();
    expect(key).toMatch(/^ey/);
    expect((await call(server.base, 'GET', '/v1.3/leads/statistics', { token: key! })).status).toBe(200);
    await page.goto(`${server.base}/settings/plugins`);
    await page.getByLabel('Plugin type').fill('crm-sync');
    await page.getByRole('button', { name: 'Register plugin' }).click();
    await expect.poll(async () => (await call(server.base, 'GET', '/v1.3/plugins', { token })).body.length).toBe(1);
    expect(await page.getByRole('status').locator('pre').textContent()).toMatch(/^plg_/);
  });
});
