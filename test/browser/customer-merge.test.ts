import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import {
  call,
  ensureAppBuilt,
  expectNoSeriousAxe,
  launchChromium,
  signInForm,
  startServer,
  type ServerProcess,
} from './agent-app-support.js';

/**
 * The customer card's same-phone notice (docs/api/resources.md "Customers with the same phone, and
 * merging them"), in a real browser against the real server: a widget visitor who left her phone in
 * one form and a customer whose lead was made with the same number in another form are two
 * customers; the card of the first names the second and offers a merge, which happens only once
 * confirmed, after which the second's lead is among the card's other leads.
 */

const OWNER = { name: 'Olga Owner', login: 'olga@example.com', pass: 'correct horse 1' };

let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let page: Page;
let token: string;
let visitorLead: number;
let otherLead: number;
let otherCustomer: number;

beforeAll(async () => {
  await ensureAppBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-merge-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({ PARLEY_DATA_DIR: dataDir, ...(database?.url ? { DATABASE_URL: database.url } : {}) });
  token = (await call(server.base, 'POST', '/v1.3/auth/register', { body: OWNER })).body.accessToken.token;
  const widget = await call(server.base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  expect(widget.status, JSON.stringify(widget.body)).toBe(200);

  const session = await call(server.base, 'POST', '/widget/v1/sessions', {
    body: { key: widget.body.widget.key, name: 'Marina', phone: '+7 916 123-45-67' },
  });
  expect(session.status, JSON.stringify(session.body)).toBe(200);
  const sent = await fetch(`${server.base}/widget/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: 'merge-1', text: 'Is the order on its way?' }),
  });
  expect(sent.status).toBe(200);
  visitorLead = (await call(server.base, 'GET', '/v1.3/leads/inbox', { token })).body[0].id;

  const made = await call(server.base, 'POST', '/v1.3/leads', {
    token,
    body: { saId: widget.body.id, customer: { name: 'Marina (phone order)', phone: '8 (916) 123-45-67' } },
  });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  otherLead = made.body.id;
  otherCustomer = (await call(server.base, 'GET', `/v1.3/leads/${otherLead}`, { token })).body.customerId;

  browser = await launchChromium();
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe("the customer card's same-phone notice", () => {
  it('names the other customer with the phone, merges only when confirmed, and shows the moved lead', async () => {
    await page.goto(`${server.base}/login`);
    await signInForm(page, OWNER.login, OWNER.pass);
    await page.goto(`${server.base}/leads/${visitorLead}`);
    const card = page.locator('.lead-panel').getByRole('region', { name: 'Customer' });
    await card.getByText('Marina (phone order) has the same phone (+79161234567).').waitFor();
    await card.getByText('No other leads.').waitFor();
    await expectNoSeriousAxe(page, 'same-phone notice');

    // Asking is not merging: cancel leaves both customers.
    await card.getByRole('button', { name: 'Merge Marina (phone order) into this customer' }).click();
    await card.getByText('Move the leads and profiles of Marina (phone order) to this customer').waitFor();
    await expectNoSeriousAxe(page, 'merge confirmation');
    await card.getByRole('button', { name: 'Cancel' }).click();
    expect((await call(server.base, 'GET', `/v1.3/customers/${otherCustomer}`, { token })).status).toBe(200);

    await card.getByRole('button', { name: 'Merge Marina (phone order) into this customer' }).click();
    await card.getByRole('button', { name: 'Merge', exact: true }).click();
    await card.getByRole('status').filter({ hasText: 'Customers merged' }).waitFor();
    await card.getByRole('link', { name: `Lead #${otherLead}` }).waitFor();
    await expect.poll(async () => (await call(server.base, 'GET', `/v1.3/customers/${otherCustomer}`, { token })).status).toBe(404);
    const moved = await call(server.base, 'GET', `/v1.3/leads/${otherLead}`, { token });
    expect(moved.body.customerId).toBe((await call(server.base, 'GET', `/v1.3/leads/${visitorLead}`, { token })).body.customerId);
    await expect.poll(() => card.getByText('has the same phone').count()).toBe(0);
  });
});
