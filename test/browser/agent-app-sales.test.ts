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
  expectNoSeriousAxe,
  signInForm,
  decodeBody,
  launchChromium,
  OUTPUT,
  startServer,
  startSmtp,
  type ReceivedMail,
  type ServerProcess,
} from './agent-app-support.js';
import { SETTINGS_SECTIONS } from '../../web/app/src/routes.js';

/**
 * The agent app as a sales team uses it, in a real browser against the real server process (one
 * server and one browser for the file): keyboard-only from sign-in to answering a lead, shortcuts
 * and their overlay, internal notes with a mention reaching the colleague live, bulk work, the
 * customer card, reports with their CSV, the funnel's Inbox column, first-run guidance, and
 * axe-core on every page (no serious or critical violation).
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any;
declare const document: any;

const OWNER = { name: 'Olga Owner', login: 'olga@example.com', pass: 'correct horse 1' };
const MANAGER = { name: 'Grace Manager', login: 'grace@example.com', pass: 'manager password 1' };

let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let smtp: SMTPServer;
const mails: ReceivedMail[] = [];
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let token: string;
let widgetKey: string;
let managerId: number;
const leads: number[] = [];
let sent = 0;

beforeAll(async () => {
  const gzipped = await ensureAppBuilt();
  expect(gzipped).toBeLessThan(150 * 1024);

  fs.mkdirSync(OUTPUT, { recursive: true });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-sales-'));
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
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
  // A step that does not happen fails with its locator, well before the test's own timeout.
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const shot = (name: string) => page.screenshot({ path: path.join(OUTPUT, `sales-${name}.png`) });

const axe = (name: string) => expectNoSeriousAxe(page, name);

async function live() {
  await page.locator('.topbar').waitFor();
  await page.locator('.live-state').waitFor({ state: 'detached', timeout: 10_000 });
}

/** A widget visitor writes: a new lead in the inbox. Answers the lead id. */
async function visitorWrites(name: string, text: string): Promise<number> {
  const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key: widgetKey, name } });
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  const res = await fetch(`${server.base}/widget/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: `c${Date.now()}-${++sent}`, text }),
  });
  expect(res.status).toBe(200);
  const inbox = (await call(server.base, 'GET', '/v1.3/leads/inbox?limit=200', { token })).body as Array<{
    id: number;
    customer: { name: string };
  }>;
  return inbox.find((l) => l.customer.name === name)!.id;
}

const focusedName = () => page.evaluate(() => document.activeElement?.getAttribute('name') ?? document.activeElement?.tagName);
const lead = async (id: number) => (await call(server.base, 'GET', `/v1.3/leads/${id}`, { token })).body;

describe('the agent app for a sales team', () => {
  it('sign-in and invitation pages pass axe; sign-in works with the keyboard only', async () => {
    await page.goto(`${server.base}/invite?token=abc`);
    await page.getByRole('heading', { name: 'Join your team on Parley' }).waitFor();
    await axe('invitation');
    await page.goto(`${server.base}/login`);
    await page.getByRole('heading', { name: 'Sign in to Parley' }).waitFor();
    await axe('sign-in');
    for (let i = 0; i < 10 && (await focusedName()) !== 'login'; i++) await page.keyboard.press('Tab');
    expect(await focusedName()).toBe('login');
    await page.keyboard.type(OWNER.login);
    await page.keyboard.press('Tab');
    expect(await focusedName()).toBe('pass');
    await page.keyboard.type(OWNER.pass);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/inbox$/);
    await live();
  });

  it('an account without a channel is shown how to connect one, the widget first; empty lists explain themselves', async () => {
    await page.getByRole('heading', { name: 'Connect your first channel' }).waitFor();
    await page.getByText('No new leads. New conversations arrive here').waitFor();
    await axe('inbox-first-run');
    await shot('first-run');
    await page.getByRole('button', { name: 'Connect the site widget' }).click();
    const snippet = await page.locator('.first-run pre').textContent();
    widgetKey = /data-parley-key="([^"]+)"/.exec(snippet ?? '')?.[1] ?? '';
    expect(widgetKey).toMatch(/^wk_/);
    await page.locator('.first-run').getByRole('button', { name: 'Close' }).click();
    await page.locator('.first-run').waitFor({ state: 'detached' });
  });

  it('answers a lead with the keyboard only: j opens it, r focuses the reply, Enter sends', async () => {
    leads.push(await visitorWrites('Ivan Visitor', 'Do you have it in blue?'));
    await page.locator(`.lead-row[data-lead-id="${leads[0]}"]`).waitFor();
    await page.keyboard.press('j');
    await page.waitForURL(new RegExp(`/leads/${leads[0]}$`));
    await page.locator('.msg.in', { hasText: 'in blue' }).waitFor();
    await page.keyboard.press('r');
    expect(await page.evaluate(() => document.activeElement?.className)).toContain('composer-input');
    await page.keyboard.type('Yes, blue is in stock.');
    await page.keyboard.press('Enter');
    await page.locator('.msg.out:not(.pending)', { hasText: 'Yes, blue is in stock.' }).waitFor();
    await axe('conversation');
  });

  it('shortcuts: ? lists them in a dialog, a assigns the open lead to me, m marks it read', async () => {
    await page.evaluate(() => document.activeElement?.blur());
    await page.keyboard.press('?');
    const dialog = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Close');
    await axe('shortcuts');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await page.keyboard.press('a');
    const me = (await call(server.base, 'GET', '/v1.3/account/me', { token })).body.user.id;
    await expect.poll(async () => (await lead(leads[0]!)).userId).toBe(me);
    expect((await lead(leads[0]!)).statusId).not.toBeNull();
    await call(server.base, 'PUT', `/v1.3/leads/${leads[0]}/unread`, { token });
    await page.keyboard.press('m');
    await expect.poll(async () => (await lead(leads[0]!)).read).toBe(true);
  });

  it('the header pickers and the customer card edit the lead and its customer', async () => {
    const head = page.locator('.conv-header-tools');
    await head.locator('input[type=number]').fill('1250');
    await head.locator('input[type=number]').press('Enter');
    await expect.poll(async () => (await lead(leads[0]!)).amount).toBe(1250);
    const card = page.locator('.lead-panel').getByRole('region', { name: 'Customer' });
    const phone = card.getByLabel('Phone');
    await phone.fill('+351 555 0100');
    await phone.press('Enter');
    const customerId = (await lead(leads[0]!)).customerId;
    await expect.poll(async () => (await call(server.base, 'GET', `/v1.3/customers/${customerId}`, { token })).body.phone).toContain('555');
    await card.getByText('No other leads.').waitFor();
    await card.getByRole('button', { name: 'Refresh avatar' }).click();
    await card.getByRole('status').waitFor();
  });

  it("a note with an @mention is stored with the colleague's id and reaches the colleague live", async () => {
    const invited = await call(server.base, 'POST', '/v1.3/managers', { token, body: { login: MANAGER.login, allowAllDeals: true } });
    expect(invited.status).toBe(200);
    await expect.poll(() => mails.length, { timeout: 10_000 }).toBe(1);
    const inviteToken = /invite\?token=([A-Za-z0-9_-]+)/.exec(decodeBody(mails[0]!.raw))![1];
    const joined = await call(server.base, 'POST', '/v1.3/auth/invitation', {
      body: { token: inviteToken, pass: MANAGER.pass, name: MANAGER.name },
    });
    expect(joined.status).toBe(200);
    managerId = (await call(server.base, 'GET', '/v1.3/account/me', { token: joined.body.accessToken.token })).body.user.id;

    await page.reload();
    await live();
    const box = page.getByRole('combobox', { name: 'Write a note for the team…' });
    await box.click();
    await page.keyboard.type('@Gra');
    await page.locator('.mention-list [role=option]', { hasText: 'Grace Manager' }).waitFor();
    await page.keyboard.press('Enter');
    await page.keyboard.type('please send the invoice');
    await page.getByRole('button', { name: 'Add note' }).click();
    await page.locator('.note .mention', { hasText: '@Grace Manager' }).waitFor();
    const notes = (await call(server.base, 'GET', `/v1.3/leads/${leads[0]}/notes`, { token })).body;
    expect(notes).toEqual([expect.objectContaining({ text: '@Grace Manager please send the invoice', mentions: [managerId] })]);
    // Nothing went to the customer.
    const [source] = (await call(server.base, 'GET', `/v1.3/messaging/${leads[0]}/sources`, { token })).body;
    const history = await call(server.base, 'POST', `/v1.3/messaging/${leads[0]}/history/${source.realId}`, { token, body: {} });
    expect(history.status).toBe(200);
    expect(JSON.stringify(history.body)).toContain('in blue');
    expect(JSON.stringify(history.body)).not.toContain('invoice');
    await axe('conversation-with-note');

    // The colleague, signed in, is told at once when mentioned.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInForm(page, MANAGER.login, MANAGER.pass);
    await live();
    await call(server.base, 'POST', `/v1.3/leads/${leads[0]}/notes`, { token, body: { text: '@grace manager call them today' } });
    const toast = page.locator('.toast', { hasText: 'Olga Owner mentioned you' });
    await toast.waitFor();
    await axe('mention-toast');
    await toast.getByRole('button', { name: 'Open' }).click();
    await page.waitForURL(new RegExp(`/leads/${leads[0]}$`));
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signInForm(page, OWNER.login, OWNER.pass);
    await live();
  });

  it('bulk work: click and shift-click select, tag, mark unread, assign, with progress and a result', async () => {
    for (const n of ['Ana', 'Bo', 'Cy']) leads.push(await visitorWrites(`${n} Visitor`, `Hello from ${n}`));
    await page.getByRole('tab', { name: /All/ }).click();
    await page.getByRole('button', { name: 'Select' }).click();
    const row = (id: number) => page.locator(`.lead-row[data-lead-id="${id}"]`);
    await row(leads[3]!).click();
    await row(leads[1]!).click({ modifiers: ['Shift'] });
    await page.getByText('3 selected').waitFor();
    await axe('inbox-bulk');
    await page.getByLabel('Tag for the selected leads').fill('spring sale');
    await page.getByRole('button', { name: 'Tag', exact: true }).click();
    await page.getByText('Done: 3 leads').waitFor();
    const tagged = (await call(server.base, 'GET', '/v1.3/leads/all?tags=spring%20sale', { token })).body
      .map((l: { id: number }) => l.id)
      .sort();
    expect(tagged).toEqual(leads.slice(1).sort());
    await page.getByRole('button', { name: 'Mark read' }).click();
    await page.getByText('Done: 3 leads').waitFor();
    await page.getByRole('button', { name: 'Mark unread' }).click();
    await expect.poll(async () => (await Promise.all(leads.slice(1).map(lead))).map((l) => l.read)).toEqual([false, false, false]);
    await page.getByLabel('Assign to…').selectOption({ label: MANAGER.name });
    await expect
      .poll(async () => (await Promise.all(leads.slice(1).map(lead))).map((l) => l.userId))
      .toEqual([managerId, managerId, managerId]);
    await shot('bulk');
    await page.getByRole('button', { name: 'Done' }).click();
    // The list shows the columns: responsible, amount, tags.
    await row(leads[1]!).getByText(MANAGER.name).waitFor();
    await row(leads[0]!).getByText('1,250').waitFor();
  });

  it('reports: counts, the chart, per employee and channel, filters, CSV', async () => {
    await page.getByRole('link', { name: 'Reports' }).click();
    await page.getByRole('heading', { name: 'Reports' }).waitFor();
    await page.getByRole('img', { name: /New leads per day, 4 in total/ }).waitFor();
    const channels = page.getByRole('table', { name: 'Per channel' });
    await channels.getByRole('row', { name: /Site chat 4/ }).waitFor();
    await page
      .getByRole('table', { name: 'Per employee' })
      .getByRole('row', { name: new RegExp(`${MANAGER.name} 3`) })
      .waitFor();
    expect(await page.getByTestId('median').textContent()).not.toBe('—');
    await axe('reports');
    await shot('reports');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    expect(csv).toContain('channel,Site chat,4,');
    expect(csv).toContain(`employee,${MANAGER.name},3,`);
    // Working time: with the account closed all week no wait counts, so every response took none.
    expect((await call(server.base, 'PUT', '/v1.3/account/working-hours', { token, body: { timezone: 'UTC', week: {} } })).status).toBe(
      200,
    );
    const [working] = await Promise.all([
      page.waitForResponse((r) => r.url().includes('/leads/statistics') && r.url().includes('responseTimeIn=working')),
      page.getByRole('radio', { name: 'Working time' }).check(),
    ]);
    expect((await working.json()).responseTime.median).toBe(0);
    await expect.poll(() => page.getByTestId('median').textContent()).toBe('0 s');
    await axe('reports-working-time');
    await Promise.all([
      page.waitForResponse((r) => r.url().includes('/leads/statistics') && r.url().includes('responseTimeIn=calendar')),
      page.getByRole('radio', { name: 'Calendar time' }).check(),
    ]);
    const open = {
      timezone: 'UTC',
      week: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, [['00:00', '24:00']]])),
    };
    expect((await call(server.base, 'PUT', '/v1.3/account/working-hours', { token, body: open })).status).toBe(200);
    // A date range before any lead: nothing.
    await page.getByLabel('Created from').fill('2020-01-01');
    await page.getByLabel('Created to').fill('2020-01-31');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByText('No leads were created in this period.').waitFor();
  });

  it('the funnel has an Inbox column and sums each column; search and every settings section pass axe', async () => {
    const fresh = await visitorWrites('Dee Visitor', 'New one');
    await page.getByRole('link', { name: 'Funnel' }).click();
    const inbox = page.locator('.column[data-status-id="0"]');
    await inbox.locator(`.card[data-lead-id="${fresh}"]`).waitFor();
    const first = (await lead(leads[0]!)).statusId;
    await page.locator(`.column[data-status-id="${first}"] .funnel-sum`, { hasText: '1,250' }).waitFor();
    await inbox.locator(`.card[data-lead-id="${fresh}"] select`).selectOption(String(first));
    await expect.poll(async () => (await lead(fresh)).statusId).toBe(first);
    await axe('funnel');
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByRole('searchbox').fill('blue');
    await page.getByRole('searchbox').press('Enter');
    await page.getByText('in blue').first().waitFor();
    await axe('search');
    for (const section of SETTINGS_SECTIONS.filter((s) => s !== 'oauth-apps' && s !== 'connected-apps')) {
      await page.goto(`${server.base}/settings/${section}`);
      await page.locator('.topbar').waitFor();
      await page.locator('main h1, main h2').first().waitFor();
      await axe(`settings-${section}`);
    }
    // Fourteen pages with axe on each: about 25 s alone, over the 30 s default on a loaded machine.
  }, 90_000);

  it("column counts and totals are the server's over every lead, past the page the board loads, and follow moves and live changes", async () => {
    // Over 100 leads (the board's page) in an active column and in the Inbox.
    const saId = (await call(server.base, 'GET', '/v1.3/leads/all?limit=1', { token })).body[0].socialAccount.id as number;
    const first = (await lead(leads[0]!)).statusId as number;
    const created: number[] = [];
    for (const statusId of [first, null]) {
      for (let i = 0; i < 104; i++) {
        const body = {
          saId,
          customer: { name: `Bulk ${statusId ?? 'inbox'} ${i}` },
          amount: 1000 + i * 7,
          ...(statusId ? { statusId } : {}),
        };
        const res = await call(server.base, 'POST', '/v1.3/leads', { token, body });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        created.push(res.body.id);
      }
    }
    const serverTotals = async () => {
      const stats = (await call(server.base, 'GET', '/v1.3/leads/statistics?amounts=true', { token })).body;
      const status = stats.statuses.find((s: { id: number }) => s.id === first);
      return {
        inbox: { count: stats.lists.inbox as number, amount: stats.amounts.inbox as string },
        first: { count: status.count as number, amount: status.amount as string },
      };
    };
    const shown = async (id: number) => {
      const column = page.locator(`.column[data-status-id="${id}"]`);
      return {
        count: Number(await column.locator('.column-head .count').textContent()),
        amount: ((await column.locator('.funnel-sum').textContent()) ?? '').replace(/^Total \$/, '').replaceAll(',', ''), // in the plan's currency (USD)
      };
    };
    const want = await serverTotals();
    expect(want.first.count).toBeGreaterThan(100);
    expect(want.inbox.count).toBeGreaterThan(100);
    await page.goto(`${server.base}/funnel`);
    await live();
    const firstColumn = page.locator(`.column[data-status-id="${first}"]`);
    const inboxColumn = page.locator('.column[data-status-id="0"]');
    await expect.poll(() => firstColumn.locator('.card').count()).toBe(100);
    await expect.poll(() => inboxColumn.locator('.card').count()).toBe(100);
    await expect.poll(() => shown(first)).toEqual(want.first);
    await expect.poll(() => shown(0)).toEqual(want.inbox);
    // What the loaded cards add up to is not the column's total.
    const loaded = (await firstColumn.locator('.card .amount').allTextContents()).reduce((n, t) => n + Number(t.replaceAll(',', '')), 0);
    expect(String(loaded)).not.toBe(want.first.amount);
    await shot('funnel-totals');

    // A card dragged from the Inbox into the column: both totals follow.
    const card = inboxColumn.locator('.card').first();
    const movedId = Number(await card.getAttribute('data-lead-id'));
    const movedAmount = (await lead(movedId)).amount as number;
    expect(movedAmount).toBeGreaterThan(0);
    const from = await card.locator('.clamp').boundingBox();
    const to = await firstColumn.locator('.column-head').boundingBox();
    if (!from || !to) throw new Error('the card or the column is not on screen');
    await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
    await page.mouse.down();
    await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 8 });
    await page.mouse.up();
    await expect.poll(async () => (await lead(movedId)).statusId).toBe(first);
    const afterMove = await serverTotals();
    expect(BigInt(afterMove.first.amount)).toBe(BigInt(want.first.amount) + BigInt(movedAmount));
    expect(BigInt(afterMove.inbox.amount)).toBe(BigInt(want.inbox.amount) - BigInt(movedAmount));
    await expect.poll(() => shown(first)).toEqual(afterMove.first);
    await expect.poll(() => shown(0)).toEqual(afterMove.inbox);

    // An amount changed elsewhere (another tab, the API) reaches the board live.
    const unloaded = created[0]!; // the oldest of the column: not among its loaded cards
    expect(await firstColumn.locator(`.card[data-lead-id="${unloaded}"]`).count()).toBe(0);
    const put = await call(server.base, 'PUT', `/v1.3/leads/${unloaded}`, { token, body: { amount: 5_000_000 } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const afterEdit = await serverTotals();
    expect(afterEdit.first.amount).not.toBe(afterMove.first.amount);
    await expect.poll(() => shown(first)).toEqual(afterEdit.first);
  });
});
