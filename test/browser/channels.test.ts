import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { FakeTelegram } from '../helpers/fake-telegram.js';
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
 * A new owner meets the channels as a flower shop would, in a real browser against the real server
 * and a fake Telegram Bot API on loopback: from the first-run screen through the gallery to a
 * Telegram bot connected (a malformed token refused before Telegram is asked), its first customer
 * message answered, health shown and credentials updated; never a type code on screen; axe finds
 * nothing serious on the gallery, the form and the help page.
 */
declare const document: any;

const OWNER = { name: 'Flora Owner', login: 'flora@example.com', pass: 'correct horse 1' };
const TYPE_CODES = /\b(msgra|msgra2|msgra_business_api|msgrb_bot|msgrb_personal|msgrc_bot|social1_\w+|social2_\w+|social3|photonetV\w+)\b/;
const BOT = { token: '7301:AAH-flowers-token', id: 7301, username: 'flowers_shop_bot' };

let tg: FakeTelegram;
let server: ServerProcess;
let database: TestDatabase | undefined;
let dataDir: string;
let browser: { context: BrowserContext; close: () => Promise<void> };
let page: Page;

beforeAll(async () => {
  await ensureAppBuilt();
  tg = await FakeTelegram.start();
  tg.addBot(BOT.token, { id: BOT.id, username: BOT.username, first_name: 'Flowers' });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-channels-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  server = await startServer({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_TELEGRAM_API_URL: tg.url,
    PARLEY_TELEGRAM_POLL_TIMEOUT: '1',
    // No public address: the bot is read by long polling, as on a laptop.
    PARLEY_PUBLIC_URL: '',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  });
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.setDefaultTimeout(10_000);
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await tg?.close();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

const axe = (name: string) => expectNoSeriousAxe(page, name);

const visibleText = () => page.evaluate(() => document.body.textContent as string);

describe('channels as a new owner meets them', () => {
  it('first run, then the gallery grouped by kind, by name and glyph, without a type code', async () => {
    await setUpFirstAccount(page, server.base, OWNER);
    await page.locator('.first-run').getByRole('link').click();
    await page.waitForURL(/\/settings\/integrations$/);
    for (const group of ['Messengers', 'Social networks', 'Your site']) await page.getByRole('heading', { name: group }).waitFor();
    for (const name of ['WhatsApp Business API', 'Telegram bot', 'Instagram Direct', 'Site chat', 'VK community', 'OK group']) {
      await page.getByRole('button', { name: `Connect: ${name}` }).waitFor();
    }
    expect(await page.locator('[data-channel-card="msgrb_personal"]').textContent()).toContain('unofficial: risk of a ban');
    expect(await page.locator('[data-channel-card="photonetV3"]').textContent()).toContain('Official API');
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    await axe('gallery');
  });

  it('a Telegram bot: steps, a malformed token refused before Telegram is asked, then connected and polling', async () => {
    await page.getByRole('button', { name: 'Connect: Telegram bot' }).click();
    const form = page.locator('[data-connect-form="msgrb_bot"]');
    await form.getByText('@BotFather').first().waitFor();
    await form.getByText('Parley has no public https address').waitFor();
    await axe('telegram form');
    const before = tg.calls.length;
    await form.getByLabel('Token').fill('AAH-flowers-token-without-its-bot-id');
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('this does not look like the expected value').waitFor();
    expect(tg.calls.length).toBe(before);

    await form.getByLabel('Token').fill(BOT.token);
    await form.getByRole('button', { name: 'Connect', exact: true }).click();
    await form.getByText('Telegram bot is connected.').waitFor();
    await form.getByText('Asks for new messages').waitFor();
    expect(tg.callsOf('getMe').length).toBeGreaterThan(0);
    expect(await visibleText()).not.toMatch(TYPE_CODES);
    expect(await visibleText()).not.toContain(BOT.token);
  });

  it('its first customer message arrives in the inbox under the channel name and is answered', async () => {
    tg.chats.set('555001', { first_name: 'Rose' });
    tg.queueUpdate(BOT.token, {
      message: {
        message_id: 1,
        date: Math.floor(Date.now() / 1000),
        chat: { id: 555001, type: 'private', first_name: 'Rose' },
        from: { id: 555001, is_bot: false, first_name: 'Rose' },
        text: 'Do you deliver peonies today?',
      },
    });
    await page.getByRole('link', { name: 'Inbox' }).click();
    const row = page.locator('.lead-row', { hasText: 'Do you deliver peonies today?' });
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain('Telegram bot');
    await row.click();
    await page.locator('.conv-title', { hasText: 'Telegram bot' }).waitFor();
    const box = page.locator('textarea.composer-input');
    await box.fill('Yes, until 6 pm.');
    await box.press('Enter');
    await page.locator('.msg.out:not(.pending)', { hasText: 'Yes, until 6 pm.' }).waitFor();
    expect(tg.callsOf('sendMessage').at(-1)?.params).toMatchObject({ chat_id: '555001', text: 'Yes, until 6 pm.' });
    expect(await visibleText()).not.toMatch(TYPE_CODES);
  });

  it('the site chat: connected from the gallery, its first visitor message arrives under its name and is answered', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Integrations' }).click();
    await page.getByRole('button', { name: 'Connect: Site chat' }).click();
    await page.locator('[data-connect-form="widget"]').getByRole('button', { name: 'Connect', exact: true }).click();
    const snippet = await page.locator('[data-snippet]').textContent();
    const key = /data-parley-key="([^"]+)"/.exec(snippet ?? '')?.[1];
    expect(key).toMatch(/^wk_/);
    expect(await visibleText()).not.toMatch(TYPE_CODES);

    const session = await call(server.base, 'POST', '/widget/v1/sessions', { body: { key, name: 'Lily' } });
    expect(session.status).toBe(200);
    const sent = await fetch(`${server.base}/widget/v1/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${session.body.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: 'lily-1', text: 'Can I pick up tulips at noon?' }),
    });
    expect(sent.status).toBe(200);
    await page.getByRole('link', { name: 'Inbox' }).click();
    const row = page.locator('.lead-row', { hasText: 'Can I pick up tulips at noon?' });
    await row.waitFor({ timeout: 15_000 });
    expect(await row.textContent()).toContain('Site chat');
    await row.click();
    const box = page.locator('textarea.composer-input');
    await box.fill('Yes, they will be ready.');
    await box.press('Enter');
    await page.locator('.msg.out:not(.pending)', { hasText: 'Yes, they will be ready.' }).waitFor();
    const history = await fetch(`${server.base}/widget/v1/messages`, { headers: { authorization: `Bearer ${session.body.token}` } });
    expect(JSON.stringify(await history.json())).toContain('Yes, they will be ready.');
    expect(await visibleText()).not.toMatch(TYPE_CODES);
  });

  it('the channel card shows health; a revoked token shows why, and new credentials bring it back', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('link', { name: 'Integrations' }).click();
    const card = page.locator('[data-integration]', { hasText: BOT.username });
    // The card first shows the catalogue's earlier copy (connected, nothing exchanged yet); the
    // page's own reload then brings the health of the message received and answered above.
    await expect.poll(() => card.textContent(), { timeout: 10_000 }).not.toContain('never');
    expect(await card.textContent()).toContain('Last message in');

    tg.revoke(BOT.token);
    await card.getByRole('button', { name: 'Check connection' }).click();
    await card.locator('[data-health-error="credentials_refused"]').waitFor();
    expect(await card.textContent()).toContain('Telegram bot refused the credentials: update them.');
    await card.getByText('What Parley recorded').click();
    await card.getByText('Telegram refused the bot token (401 Unauthorized): check it with @BotFather.').waitFor();

    const fresh = `${BOT.id}:AAH-flowers-fresh`;
    tg.addBot(fresh, { id: BOT.id, username: BOT.username, first_name: 'Flowers' });
    await card.getByRole('button', { name: 'Update credentials' }).click();
    await card.locator('[data-credentials-form]').getByLabel('Token').fill(fresh);
    await card.getByRole('button', { name: 'Save credentials' }).click();
    await card.locator('[data-health-error]').waitFor({ state: 'detached' });
    await card.locator('[data-status="active"]').waitFor();
  });

  it('the help page loads directly and reads as steps', async () => {
    await page.goto(`${server.base}/help/channels/whatsapp-cloud`);
    await page.getByRole('heading', { name: 'WhatsApp Business API' }).waitFor();
    expect(await page.locator('.help-page ol li').count()).toBe(4);
    await axe('help page');
  });
});
