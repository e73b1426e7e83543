import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import type { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import {
  call,
  decodeBody,
  OUTPUT,
  ensureAppBuilt,
  expectNoSeriousAxe,
  launchChromium,
  type ReceivedMail,
  type ServerProcess,
  signInForm,
  startServer,
  startSmtp,
} from './agent-app-support.js';

/**
 * Settings -> Automation in the agent app against the real server process (docs/api/automation.md):
 * working hours with a holiday, the away-reply preset answering a widget visitor, round robin over
 * two employees, the rule editor with a refused regular expression and the rule's runs, and the
 * Available / Away switch. Out of hours is made relative to now (today is a holiday and the only
 * open day is three days away), so the wall-clock hour does not matter.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */

const OWNER = { name: 'Olga Owner', login: 'olga@example.com', pass: 'correct horse 1' };
const MANAGERS = [
  { name: 'Mark Manager', login: 'mark@example.com', pass: 'manager password 1' },
  { name: 'Nina Manager', login: 'nina@example.com', pass: 'manager password 2' },
];
const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let smtp: SMTPServer;
const mails: ReceivedMail[] = [];
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let token: string;
let ownerId: number;
let widgetId: number;
let widgetKey: string;
const managerIds: number[] = [];
let sent = 0;

beforeAll(async () => {
  await ensureAppBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-automation-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  const mail = await startSmtp(mails);
  smtp = mail.server;
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_SMTP_URL: `smtp://127.0.0.1:${mail.port}`,
    PARLEY_LOGIN_MAX_PER_IP: '1000',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  const reg = await call(server.base, 'POST', '/v1.3/auth/register', { body: OWNER });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  token = reg.body.accessToken.token;
  ownerId = (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user.id;
  const widget = await call(server.base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  widgetId = widget.body.id;
  widgetKey = widget.body.widget.key;
  // Two confirmed managers who reach every integration, through the invitation e-mail.
  for (const [i, m] of MANAGERS.entries()) {
    expect((await call(server.base, 'POST', '/v1.3/managers', { token, body: { login: m.login, sources: [] } })).status).toBe(200);
    await vi.waitFor(() => expect(mails.length).toBe(i + 1), { timeout: 10_000, interval: 50 });
    const inviteToken = /invite\?token=([A-Za-z0-9_-]+)/.exec(decodeBody(mails[i]!.raw))![1];
    const joined = await call(server.base, 'POST', '/v1.3/auth/invitation', { body: { token: inviteToken, pass: m.pass, name: m.name } });
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    managerIds.push((await call(server.base, 'GET', '/v1.3/account/me', { token: joined.body.accessToken.token })).body.user.id);
  }
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
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A widget visitor who writes once, through the widget's own API; answers the lead and the visitor's view of the chat. */
async function visitor(name: string, text: string) {
  const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key: widgetKey, name } });
  expect(session.status).toBe(200);
  const res = await fetch(`${server.base}/widget/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: `v${++sent}`, text }),
  });
  expect(res.status).toBe(200);
  let leadId = 0;
  await expect
    .poll(async () => {
      const list = (await call(server.base, 'GET', '/v1.3/leads/inbox?limit=200', { token })).body as any[];
      leadId = list.find((l) => l.customer?.name === name)?.id ?? 0;
      return leadId;
    })
    .toBeGreaterThan(0);
  const history = async () =>
    (
      (await (await fetch(`${server.base}/widget/v1/messages`, { headers: { authorization: `Bearer ${session.body.token}` } })).json()) as {
        messages: Array<{ from: string; text: string }>;
      }
    ).messages;
  return { leadId, history };
}

async function openAutomation() {
  await page.goto(`${server.base}/settings/automation`);
  await page.getByRole('heading', { name: 'Automation', level: 1 }).waitFor();
}

describe('Settings -> Automation', () => {
  it('the owner sets working hours with a holiday in the week grid, and the API answers them; a range ending before it starts is shown at the range', async () => {
    await openAutomation();
    await page.getByText('No working hours set yet').waitFor();
    // Without working hours the away reply would never be sent: its card says so.
    await page.locator('[data-preset=away]').getByText('Working hours are not set yet').waitFor();
    const now = new Date();
    const today = now.toISOString().slice(0, 10);
    // Monday-based index of today in UTC; the one open day is three days away.
    const open = ((now.getUTCDay() + 6) % 7) + 3;
    const day = DAYS[open % 7];
    const dayName = DAY_NAMES[open % 7];
    const form = page.getByRole('form', { name: 'Working hours' });
    await form.getByLabel('Time zone').selectOption('UTC');
    for (const [i, d] of DAYS.entries()) {
      // The grid starts open around the clock (the server's answer for hours never set): close every day.
      const remove = form.getByRole('button', { name: `${DAY_NAMES[i]}: remove hours 1` });
      if (await remove.count()) await remove.click();
      await form.locator(`tr[data-day=${d}]`).getByText('Closed').waitFor();
    }
    await form.getByRole('button', { name: `${dayName}: add hours` }).click();
    await form.getByLabel(`${dayName}: hours 1 from`).fill('08:00');
    await form.getByLabel(`${dayName}: hours 1 until`).fill('07:00');
    await form.getByLabel('Holiday date').fill(today);
    await form.getByRole('button', { name: 'Add holiday' }).click();
    await form.locator(`[data-holiday="${today}"]`).waitFor();
    await form.getByRole('button', { name: 'Save working hours' }).click();
    await form.locator(`tr[data-day=${day}]`).getByText('Not accepted: must end after it starts').waitFor();
    expect((await call(server.base, 'GET', '/v1.3/account/working-hours', { token })).body.timezone).toBe('UTC');
    expect((await call(server.base, 'GET', '/v1.3/account/working-hours', { token })).body.holidays).toEqual([]);

    // 00:00 at the end is midnight: 24:00 to the API.
    await form.getByLabel(`${dayName}: hours 1 until`).fill('00:00');
    await form.getByRole('button', { name: 'Save working hours' }).click();
    await form.getByRole('status').getByText('Saved').waitFor();
    expect((await call(server.base, 'GET', '/v1.3/account/working-hours', { token })).body).toEqual({
      timezone: 'UTC',
      week: { [day]: [['08:00', '24:00']] },
      holidays: [today],
    });
    await page.reload();
    await expect.poll(() => page.getByLabel(`${dayName}: hours 1 from`).inputValue()).toBe('08:00');
    await page.locator(`[data-holiday="${today}"]`).waitFor();
    expect(await page.locator('[data-preset=away]').getByText('Working hours are not set yet').count()).toBe(0);
  });

  it('the away-reply preset, its text edited before switching it on, answers a visitor who writes out of hours', async () => {
    await openAutomation();
    const card = page.locator('[data-preset=away]');
    const toggle = card.getByRole('switch', { name: 'Reply outside working hours' });
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('false');
    await card.getByLabel('Reply text').fill('We are closed, {customer.name}. We answer on the next working day.');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('true');
    const rules = (await call(server.base, 'GET', '/v1.3/automation/rules', { token })).body as any[];
    expect(rules).toHaveLength(1);
    expect(rules[0]).toMatchObject({
      enabled: true,
      event: 'message.incoming',
      conditions: [{ field: 'time.workingHours', op: 'is', value: false }],
      actions: [{ type: 'reply', text: 'We are closed, {customer.name}. We answer on the next working day.' }],
    });
    // The preset is an ordinary rule: it is in the list and can be edited there.
    await page.locator(`[data-rule="${rules[0].id}"] strong`, { hasText: 'Reply outside working hours' }).waitFor();

    const v = await visitor('Ada Visitor', 'Hello, is anyone there?');
    await expect
      .poll(async () => (await v.history()).filter((m) => m.from !== 'visitor').map((m) => m.text), { timeout: 15_000 })
      .toEqual(['We are closed, Ada Visitor. We answer on the next working day.']);
    await page.goto(`${server.base}/leads/${v.leadId}`);
    await page.locator('.msg.out', { hasText: 'We are closed, Ada Visitor.' }).waitFor();
  });

  it('round robin on the channel, with two employees picked, gives two new leads to the two of them', async () => {
    await openAutomation();
    const card = page.locator(`[data-distribution="${widgetId}"]`);
    await card.getByLabel('Assign new leads').selectOption('round_robin');
    await card.getByLabel('Everyone with access to the channel').uncheck();
    await card.getByLabel(OWNER.name).uncheck();
    await card.getByRole('button', { name: 'Save' }).click();
    await card.getByRole('status').getByText('Saved').waitFor();
    const stored = (await call(server.base, 'GET', `/v1.3/integrations/${widgetId}/distribution`, { token })).body;
    expect(stored).toEqual({ mode: 'round_robin', employees: [...managerIds].sort((a, b) => a - b), onlyAvailable: true });

    const a = await visitor('Bob Visitor', 'First question');
    const b = await visitor('Cid Visitor', 'Second question');
    const assignee = async (id: number) => (await call(server.base, 'GET', `/v1.3/leads/${id}`, { token })).body.userId as number | null;
    await expect
      .poll(async () => [await assignee(a.leadId), await assignee(b.leadId)].sort(), { timeout: 15_000 })
      .toEqual([...managerIds].sort());
  });

  it('a rule made in the editor: a catastrophic regular expression is refused at its field, then the rule runs and its runs show each action', async () => {
    await openAutomation();
    await page.getByRole('button', { name: 'New rule' }).click();
    const editor = page.getByRole('form', { name: 'New rule' });
    await editor.getByLabel('Rule name').fill('Price questions');
    await editor.getByRole('button', { name: 'Add condition' }).click();
    await editor.getByLabel('Condition 1: comparison').selectOption('matches');
    await editor.getByLabel('Condition 1: value').fill('(a+)+$');
    await editor.getByRole('button', { name: 'Add action' }).click();
    await editor.getByLabel('Action 1', { exact: true }).selectOption('addTag');
    await editor.getByLabel('Action 1: value').fill('price');
    await editor.getByRole('button', { name: 'Add action' }).click();
    await editor.getByLabel('Action 2: value').fill('Our prices are on the site.');
    await editor.getByRole('button', { name: 'Save' }).click();
    const row = editor.locator('[data-condition="0"]');
    await row.getByText(/Not accepted: .*backtrack/).waitFor();
    expect(await editor.getByLabel('Condition 1: value').getAttribute('aria-invalid')).toBe('true');
    expect(((await call(server.base, 'GET', '/v1.3/automation/rules', { token })).body as any[]).map((r) => r.name)).not.toContain(
      'Price questions',
    );
    await expectNoSeriousAxe(page, 'rule editor with an error');

    await editor.getByLabel('Condition 1: value').fill('price|cost');
    await editor.getByRole('button', { name: 'Save' }).click();
    await editor.waitFor({ state: 'detached' });
    const rule = ((await call(server.base, 'GET', '/v1.3/automation/rules', { token })).body as any[]).find(
      (r) => r.name === 'Price questions',
    );
    expect(rule).toMatchObject({
      event: 'message.incoming',
      conditions: [{ field: 'message.text', op: 'matches', value: 'price|cost' }],
      actions: [
        { type: 'addTag', tag: 'price' },
        { type: 'reply', text: 'Our prices are on the site.' },
      ],
    });

    const v = await visitor('Dora Visitor', 'What is the price of the blue one?');
    const item = page.locator(`[data-rule="${rule.id}"]`);
    await item.getByRole('button', { name: 'Recent runs of Price questions' }).click();
    const runs = item.getByRole('region', { name: 'Recent runs of Price questions' });
    // A run shows its actions as they are done: refreshed until both are.
    await expect
      .poll(
        async () => {
          await runs.getByRole('button', { name: 'Refresh' }).click();
          return runs.locator('.rule-run li').allTextContents();
        },
        { timeout: 15_000 },
      )
      .toEqual(['Add tag: done', 'Reply: done']);
    expect(await runs.locator('.rule-run').count()).toBe(1);
    await runs.getByRole('link', { name: `Lead #${v.leadId}` }).waitFor();
    await expectNoSeriousAxe(page, 'automation settings with runs');
    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'automation-settings.png'), fullPage: true });

    // Switched off from the list: the server keeps it, disabled.
    await item.getByRole('switch').uncheck();
    await expect
      .poll(async () => (await call(server.base, 'GET', `/v1.3/automation/rules/${rule.id}`, { token })).body.enabled)
      .toBe(false);
  });

  it("the Available / Away switch changes the owner's `available`, the team list shows it, and a failed change is a toast", async () => {
    await openAutomation();
    const toggle = page.getByRole('switch', { name: 'Available for new leads' });
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('true');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('false');
    expect(await toggle.textContent()).toBe('Away');
    const me = async () => ((await call(server.base, 'GET', '/v1.3/managers', { token })).body as any[]).find((m) => m.id === ownerId);
    expect((await me()).available).toBe(false);
    await page.getByRole('link', { name: 'Employees' }).click();
    await page.locator(`[data-employee="${OWNER.login}"] [data-available=false]`).getByText('Away').waitFor();

    // The server cannot be reached: the switch stays Away and says so.
    await page.route('**/v1.3/managers/*', (route) => (route.request().method() === 'PUT' ? route.abort() : route.continue()));
    await toggle.click();
    await page
      .getByRole('alert')
      .getByText(/Availability was not changed/)
      .waitFor();
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    expect((await me()).available).toBe(false);
    await page.unroute('**/v1.3/managers/*');
    await toggle.click();
    await expect.poll(async () => (await me()).available).toBe(true);
    await expectNoSeriousAxe(page, 'employees with availability');
  });

  it('the owner switches another employee Away and back in the team list; a refused change is a toast', async () => {
    await page.goto(`${server.base}/settings/employees`);
    const [mark] = MANAGERS;
    const toggle = page.locator(`[data-employee="${mark!.login}"]`).getByRole('switch', { name: `Availability of ${mark!.name}` });
    const available = async () =>
      ((await call(server.base, 'GET', '/v1.3/managers', { token })).body as any[]).find((m) => m.id === managerIds[0]).available;
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('true');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('false');
    expect(await toggle.textContent()).toBe('Away');
    expect(await available()).toBe(false);
    // The owner's own switch in the header is a different one and did not move.
    expect(await page.getByRole('switch', { name: 'Available for new leads' }).getAttribute('aria-checked')).toBe('true');

    // The server refuses: the toast says so and the row keeps what the server has.
    await page.route('**/v1.3/managers/*', (route) =>
      route.request().method() === 'PUT'
        ? route.fulfill({
            status: 500,
            contentType: 'application/json',
            body: JSON.stringify({ error: 'internal', message: 'Internal error' }),
          })
        : route.continue(),
    );
    await toggle.click();
    const toast = page.getByRole('alert').filter({ hasText: /Availability was not changed/ });
    await toast.waitFor();
    expect(await toggle.getAttribute('aria-checked')).toBe('false');
    expect(await available()).toBe(false);
    await expectNoSeriousAxe(page, 'team list with a refused availability change');
    await toast.getByRole('button', { name: 'Dismiss' }).click();
    await page.unroute('**/v1.3/managers/*');
    await toggle.click();
    await expect.poll(available).toBe(true);
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('true');
  });

  it('"Greet new customers" answers a first message; "Close quiet leads" is a lead.idle rule to a completed status; a switch turns a preset off', async () => {
    await openAutomation();
    const greeting = page.locator('[data-preset=greeting]');
    await greeting.getByLabel('Reply text').fill('Hello {customer.name}, welcome!');
    await greeting.getByRole('switch', { name: 'Greet new customers' }).click();
    await expect.poll(() => greeting.getByRole('switch').getAttribute('aria-checked')).toBe('true');
    const v = await visitor('Eve Visitor', 'First time here');
    await expect
      .poll(async () => (await v.history()).filter((m) => m.from !== 'visitor').map((m) => m.text), { timeout: 15_000 })
      .toContain('Hello Eve Visitor, welcome!');

    const statuses = (await call(server.base, 'GET', '/v1.3/statuses', { token })).body as Array<{
      id: number;
      type: string;
      name: string;
    }>;
    const done = statuses.find((st) => st.type === 'completed')!;
    const close = page.locator('[data-preset=autoClose]');
    await close.getByLabel('Days without a customer message').fill('2');
    await close.getByLabel('Move to').selectOption(String(done.id));
    await close.getByRole('switch', { name: 'Close quiet leads' }).click();
    await expect.poll(() => close.getByRole('switch').getAttribute('aria-checked')).toBe('true');
    const rules = (await call(server.base, 'GET', '/v1.3/automation/rules', { token })).body as any[];
    expect(rules.find((r) => r.event === 'lead.idle')).toMatchObject({
      enabled: true,
      idleMinutes: 2 * 24 * 60,
      conditions: [],
      actions: [{ type: 'setStatus', statusId: done.id }],
    });
    const greetingRule = rules.find((r) => r.actions.some((a: any) => a.text === 'Hello {customer.name}, welcome!'));
    expect(greetingRule).toMatchObject({ event: 'message.incoming', conditions: [{ field: 'customer.isNew', op: 'is', value: true }] });

    // Off again: the same rule, disabled, not deleted; on again: enabled, still one rule.
    await greeting.getByRole('switch').click();
    await expect.poll(() => greeting.getByRole('switch').getAttribute('aria-checked')).toBe('false');
    const after = (await call(server.base, 'GET', `/v1.3/automation/rules/${greetingRule.id}`, { token })).body;
    expect(after.enabled).toBe(false);
    await greeting.getByRole('switch').click();
    await expect.poll(() => greeting.getByRole('switch').getAttribute('aria-checked')).toBe('true');
    expect((await call(server.base, 'GET', '/v1.3/automation/rules', { token })).body).toHaveLength(rules.length);
  });

  it('the section is in Russian too', async () => {
    await page.getByRole('combobox', { name: 'Language' }).selectOption('ru');
    await page.goto(`${server.base}/settings/automation`);
    await page.getByRole('heading', { name: 'Автоматизация', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Ответ в нерабочее время' }).waitFor();
    await page.getByRole('heading', { name: 'Рабочее время', exact: true }).waitFor();
    await page.getByRole('combobox', { name: 'Язык' }).selectOption('en');
  });
});
