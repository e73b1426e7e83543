import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { FakeMetaGraph, waWebhook, type FakeNumber } from '../helpers/fake-meta-graph.js';
import { FakeMetaPages } from '../helpers/fake-meta-pages.js';
import {
  call,
  ensureAppBuilt,
  expectNoSeriousAxe,
  launchChromium,
  setUpFirstAccount,
  startServer,
  type ServerProcess,
} from './agent-app-support.js';

/**
 * The flower shop connects WhatsApp Business API and Instagram Direct from the gallery, in a real
 * browser against the real server and a fake Graph API on loopback: each form's steps and fields, a
 * malformed id refused before Meta is asked, a refused token shown as its sentence, the webhook box
 * to paste into the Meta app, a test message to the owner's phone; and an open conversation that
 * shows its channel's trouble, and its end, live. Never a type code on screen; axe finds nothing
 * serious.
 */
declare const document: any;

const OWNER = { name: 'Flora Owner', login: 'flora-meta@example.com', pass: 'correct horse 1' };
const PUBLIC = 'https://parley.example.com';
const TYPE_CODES = /\b(msgra|msgra2|msgra_business_api|msgrb_bot|msgrb_personal|msgrc_bot|social1_\w+|social2_\w+|social3|photonetV\w+)\b/;
const WA: FakeNumber = {
  token: 'EAAG-flowers-system-user',
  phoneNumberId: '106540352242922',
  wabaId: '102290129340398',
  display: '+1 555-078-3881',
  name: 'Flowers',
};
const WA_SECRET = 'flowers-app-secret';
const IG = { id: '17841405822304914', token: 'IGAA-flowers-token', name: 'flowers.shop', picture: 'https://cdn.example/ig.jpg' };

let graph: FakeMetaGraph;
let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;
let waId = 0;

beforeAll(async () => {
  await ensureAppBuilt();
  graph = await FakeMetaGraph.start();
  graph.addNumber(WA);
  graph.templates.set(WA.wabaId, [{ name: 'hello_world', language: 'en_US', category: 'UTILITY', status: 'APPROVED', components: [] }]);
  new FakeMetaPages(graph, () => Date.now()).addPage({ ...IG, kind: 'instagram' });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-channels-meta-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_META_GRAPH_URL: graph.url,
    PARLEY_INSTAGRAM_GRAPH_URL: graph.url,
    PARLEY_PUBLIC_URL: PUBLIC,
    PARLEY_SEND_TIMEOUT_MS: '3000',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await graph?.close();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const axe = (name: string) => expectNoSeriousAxe(page, name);
const visibleText = () => page.evaluate(() => document.body.textContent as string);
const ownerToken = async () =>
  (await call(server.base, 'POST', '/v1.3/auth/login', { body: { login: OWNER.login, pass: OWNER.pass } })).body.accessToken
    .token as string;

async function openGallery() {
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('link', { name: 'Integrations' }).click();
  await page.getByRole('heading', { name: 'Messengers' }).waitFor();
}

describe('WhatsApp Business API and Instagram Direct from the gallery', () => {
  it('WhatsApp Business API: steps and fields, a non-numeric id named before Meta is asked, a refused token as its sentence', async () => {
    await setUpFirstAccount(page, server.base, OWNER);
    await openGallery();
    await page.getByRole('button', { name: 'Connect: WhatsApp Business API' }).click();
    const form = page.locator('[data-connect-form="msgra_business_api"]');
    expect(await form.locator('ol.steps li').count()).toBe(4);
    await form.getByText('permanent').first().waitFor();
    for (const label of ['Access token (system user, permanent)', 'Phone number ID', 'WhatsApp Business Account ID', 'App secret']) {
      await form.getByLabel(label).waitFor();
    }
    await form.getByRole('link', { name: 'Step-by-step help' }).waitFor();
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    await axe('whatsapp form');

    const before = graph.calls.length;
    await form.getByLabel('Access token (system user, permanent)').fill('EAAG-not-this-one');
    await form.getByLabel('Phone number ID').fill('+1 555 078 3881');
    await form.getByLabel('WhatsApp Business Account ID').fill(WA.wabaId);
    await form.getByLabel('App secret').fill(WA_SECRET);
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('Phone number ID: this does not look like the expected value').waitFor();
    expect(await form.getByLabel('Phone number ID').getAttribute('aria-invalid')).toBe('true');
    expect(graph.calls.length).toBe(before);

    await form.getByLabel('Phone number ID').fill(WA.phoneNumberId);
    // Meta's refusal carries markup and runs long: it is kept cut, and shown as text.
    graph.failNext(new RegExp(`^${WA.phoneNumberId}$`), {
      status: 401,
      error: { message: `Invalid OAuth access token: <b>expired</b> <img src=x> ${'x'.repeat(3000)}`, type: 'OAuthException', code: 190 },
    });
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('WhatsApp Business API did not accept the connection.').waitFor();
    const refusal = form.locator('[data-health-error="credentials_refused"]');
    await refusal.getByText('WhatsApp Business API refused the credentials: update them.').waitFor();
    await refusal.getByText('What Parley recorded').click();
    const recorded = (await refusal.locator('details p').textContent()) ?? '';
    expect(recorded).toMatch(/^WhatsApp refused the .+: .+\.$/);
    expect(recorded).toContain('<b>expired</b> <img src=x>');
    expect(recorded.length).toBeLessThan(600);
    expect(await refusal.locator('details b, details img').count()).toBe(0);
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    await axe('whatsapp refused');
  });

  it('new credentials connect it; the webhook box gives the callback URL and verify token with copy buttons; a test goes to the owner', async () => {
    await page.getByRole('button', { name: 'Back to channels' }).click();
    const card = page.locator('[data-integration]', { hasText: 'WhatsApp Business API' });
    await card.locator('[data-status="auth failure"]').waitFor();
    await card.getByRole('button', { name: 'Update credentials' }).click();
    const creds = card.locator('[data-credentials-form]');
    await creds.getByLabel('Access token (system user, permanent)').fill(WA.token);
    await creds.getByLabel('Phone number ID').fill(WA.phoneNumberId);
    await creds.getByLabel('WhatsApp Business Account ID').fill(WA.wabaId);
    await creds.getByLabel('App secret').fill(WA_SECRET);
    await card.getByRole('button', { name: 'Save credentials' }).click();
    await card.locator('[data-status="active"]').waitFor();
    await card.locator('[data-health-error]').waitFor({ state: 'detached' });
    expect(await card.textContent()).toContain(WA.display);

    const box = card.locator('[data-meta-webhook]');
    const id = await card.getAttribute('data-integration');
    await box.getByText(`${PUBLIC}/channels/meta/${id}`).waitFor();
    expect(await box.locator('code').nth(1).textContent()).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(await box.getByRole('button', { name: 'Copy' }).count()).toBe(2);

    await card.getByRole('button', { name: 'Send a test' }).click();
    const test = card.locator('[data-send-test]');
    const calls = graph.calls.length;
    await test.getByLabel('Your phone number, with the country code').fill('my phone');
    await test.getByRole('button', { name: 'Send a test' }).click();
    await test.getByText('Your phone number: type it with the country code').waitFor();
    expect(graph.calls.length).toBe(calls);
    await test.getByLabel('Your phone number, with the country code').fill('+44 7700 900123');
    await test.getByRole('button', { name: 'Send a test' }).click();
    await test.getByText('Sent to +44 7700 900123').waitFor();
    expect(graph.callsOf('POST', /\/messages$/).at(-1)?.body).toMatchObject({
      to: '447700900123',
      type: 'template',
      template: { name: 'hello_world', language: { code: 'en_US' } },
    });
    await axe('whatsapp card');
  });

  it('Instagram Direct: steps and fields, a malformed token named, a refused one as its sentence, then connected with its webhook box', async () => {
    await page.getByRole('button', { name: 'Connect: Instagram Direct' }).click();
    const form = page.locator('[data-connect-form="photonetV3"]');
    expect(await form.locator('ol.steps li').count()).toBe(3);
    await form.getByText('professional account').waitFor();
    await form.getByLabel('Instagram access token').waitFor();
    await form.getByLabel('App secret').waitFor();
    await form.getByLabel('Allow answers up to 7 days after the last message (HUMAN_AGENT tag)').waitFor();
    await axe('instagram form');

    const before = graph.calls.length;
    await form.getByLabel('Instagram access token').fill('IGAA pasted with a space');
    await form.getByLabel('App secret').fill('ig-app-secret');
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('this does not look like the expected value').waitFor();
    expect(graph.calls.length).toBe(before);

    await form.getByLabel('Instagram access token').fill('IGAA-revoked');
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('Instagram Direct refused the credentials: update them.').waitFor();
    await form.getByRole('button', { name: 'Back to channels' }).click();
    const refused = page.locator('[data-integration]', { hasText: 'Instagram Direct' });
    await refused.getByRole('button', { name: 'Disconnect' }).waitFor();
    page.once('dialog', (d) => void d.accept());
    await refused.getByRole('button', { name: 'Disconnect' }).click();
    await refused.waitFor({ state: 'detached' });

    await page.getByRole('button', { name: 'Connect: Instagram Direct' }).click();
    await form.getByLabel('Instagram access token').fill(IG.token);
    await form.getByLabel('App secret').fill('ig-app-secret');
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('Instagram Direct is connected.').waitFor();
    const box = form.locator('[data-meta-webhook]');
    await box.getByText(new RegExp(`^${PUBLIC}/channels/meta/\\d+$`)).waitFor();
    expect(await box.getByRole('button', { name: 'Copy' }).count()).toBe(2);
    await form.getByText('write to it from your own account').waitFor();
    expect(graph.callsOf('POST', new RegExp(`^${IG.id}/subscribed_apps$`)).length).toBe(1);
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    expect(await visibleText()).not.toContain(IG.token);
    await axe('instagram connected');
  });

  it('an open conversation shows its channel refused, live, with the way to its card; new credentials clear it live', async () => {
    const token = await ownerToken();
    const list = (await call(server.base, 'GET', '/v1.3/integrations', { token })).body as Array<{ id: number; type: string }>;
    const wa = list.find((i) => i.type === 'msgra_business_api')!;
    const body = JSON.stringify(
      waWebhook(
        WA.phoneNumberId,
        {
          contacts: [{ profile: { name: 'Rose' }, wa_id: '447700900456' }],
          messages: [
            {
              from: '447700900456',
              id: `wamid.IN${++waId}`,
              timestamp: String(Math.floor(Date.now() / 1000)),
              type: 'text',
              text: { body: 'Peonies today?' },
            },
          ],
        },
        WA.wabaId,
      ),
    );
    const posted = await fetch(`${server.base}/channels/meta/${wa.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': FakeMetaGraph.sign(WA_SECRET, body) },
      body,
    });
    expect(posted.status).toBe(200);
    await page.getByRole('link', { name: 'Inbox' }).click();
    await page.locator('.lead-row', { hasText: 'Peonies today?' }).click();
    await page.locator('.conv-title', { hasText: 'WhatsApp Business API' }).waitFor();
    const banner = page.locator(`[data-channel-problem="${wa.id}"]`);
    expect(await banner.count()).toBe(0);

    // The token is revoked in the Meta app; the owner checks the connection from elsewhere.
    WA.token = 'EAAG-revoked';
    const checked = await call(server.base, 'POST', `/v1.3/integrations/${wa.id}/reconnect`, { token });
    expect(checked.body.status).toBe('auth failure');
    await banner.getByText('WhatsApp Business API refused the credentials: update them.').waitFor();
    await banner.getByRole('link', { name: 'Open the channel settings' }).waitFor();
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    await axe('conversation with channel banner');

    WA.token = 'EAAG-flowers-fresh';
    const fresh = { accessToken: WA.token, phoneNumberId: WA.phoneNumberId, wabaId: WA.wabaId, appSecret: WA_SECRET };
    const updated = await call(server.base, 'PUT', `/v1.3/integrations/${wa.id}/credentials`, { token, body: { credentials: fresh } });
    expect(updated.status).toBe(200);
    await banner.waitFor({ state: 'detached' });

    WA.token = 'EAAG-revoked-again';
    await call(server.base, 'POST', `/v1.3/integrations/${wa.id}/reconnect`, { token });
    await banner.getByRole('link', { name: 'Open the channel settings' }).click();
    await page.waitForURL(new RegExp(`/settings/integrations\\?channel=${wa.id}$`));
    const card = page.locator(`[data-integration="${wa.id}"].wanted`);
    await card.waitFor();
    expect(await card.evaluate((el) => el === document.activeElement)).toBe(true);
  });
});
