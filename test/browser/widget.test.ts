import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import zlib from 'node:zlib';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from '../helpers/harness.js';
import { connectWidget, sign, widgetSnapshot } from '../widget-support.js';

/**
 * The site widget end to end in a real browser (Debian's chromium, headless): the demo page served
 * by Parley, a visitor's message becoming a lead, a reply sent through the API appearing live,
 * history after a reload; identity verification and origin refusal from a second origin.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const OUTPUT = path.join(root, 'test-output');

let h: Harness;
let owner: SignedUp;
let base: string;
let site: http.Server;
let siteBase: string;
let userDataDir: string;
let context: BrowserContext;

beforeAll(async () => {
  const { buildWidget } = (await import(pathToFileURL(path.join(root, 'scripts', 'build-widget.mjs')).href)) as {
    buildWidget: (o: { quiet: boolean }) => Promise<{ gzipped: number }>;
  };
  const { gzipped } = await buildWidget({ quiet: true });
  expect(gzipped).toBeLessThan(60 * 1024);

  h = await createHarness();
  owner = await h.signUp();
  base = await h.app.listen({ port: 0, host: '127.0.0.1' });

  // "Another site": a page on a second origin embedding the widget from Parley's.
  site = http.createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    const attr = (name: string, value: string | null) => (value ? ` ${name}="${value.replace(/[^A-Za-z0-9_-]/g, '')}"` : '');
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(
      `<!doctype html><html><head><meta name="viewport" content="width=device-width,initial-scale=1"><style>button{color:green}</style></head>` +
        `<body><h1>Shop</h1><button id="host-button">Host button</button>` +
        `<script src="${base}/widget.js"${attr('data-parley-key', q.get('key'))}${attr('data-parley-identifier', q.get('identifier'))}` +
        `${attr('data-parley-signature', q.get('signature'))} async></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteBase = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: { width: 1200, height: 800 },
  });
}, 120_000);

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
  await h?.close();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

/** A small solid-color PNG (a real image for the browser to show). */
function png(width: number, height: number, rgb: [number, number, number]): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', zlib.deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const widget = (page: Page) => page.locator('#parley-widget');

async function inbox() {
  const res = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Array<{ id: number; socialAccount: { id: number; type: string }; customer: { name: string; email: string | null } }>;
}

describe('the site widget in a browser', () => {
  it('runs the whole loop on the demo page: pre-chat, message -> lead, live reply, history after reload', async () => {
    const w = await connectWidget(h, owner, { title: 'Demo shop', preChat: { name: 'required', email: 'optional', phone: 'off' } });
    const page = await context.newPage();
    await page.goto(`${base}/demo/widget`);
    await expect.poll(() => widget(page).getAttribute('data-state')).toBe('ready');

    // Keyboard: focus the launcher and open with Enter; the pre-chat form asks for the name.
    await page.locator('#parley-widget button.launcher').focus();
    await page.keyboard.press('Enter');
    const form = page.locator('#parley-widget form.prechat');
    await form.waitFor();
    await form.locator('button[type=submit]').click();
    await expect.poll(() => form.locator('.error').textContent()).toContain('required');
    await form.locator('input[name=name]').fill('Grace Hopper');
    await form.locator('input[name=email]').fill('grace@example.com');
    await form.locator('button[type=submit]').click();

    const input = page.locator('#parley-widget textarea');
    await input.waitFor();
    await expect.poll(() => widget(page).getAttribute('data-socket')).toBe('open');
    await input.fill('Do you ship to Lisbon?');
    await input.press('Enter');
    await page.locator('#parley-widget .msg.visitor:not(.pending)', { hasText: 'Do you ship to Lisbon?' }).waitFor();

    // The lead, with the right customer, through the API.
    const lead = (await inbox()).find((l) => l.socialAccount.id === w.id);
    expect(lead).toBeDefined();
    expect(lead!.customer).toMatchObject({ name: 'Grace Hopper', email: 'grace@example.com' });

    // A reply through the API appears without a reload.
    const reply = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${lead!.id}/send`,
      token: owner.access,
      payload: { message: { text: 'Yes, we ship to Lisbon in 2 days.' } },
    });
    expect(reply.statusCode, reply.body).toBe(200);
    await page.locator('#parley-widget .msg.agent', { hasText: 'Yes, we ship to Lisbon in 2 days.' }).waitFor({ timeout: 10_000 });

    // A visitor attachment: uploaded, sent, shown as an image.
    await page
      .locator('#parley-widget input[type=file]')
      .setInputFiles({ name: 'parcel.png', mimeType: 'image/png', buffer: png(120, 80, [234, 88, 12]) });
    await input.fill('Here is the parcel label');
    await page.locator('#parley-widget button.send').click();
    const sentImage = page.locator('#parley-widget .msg.visitor:not(.pending) img[alt="parcel.png"]');
    await sentImage.waitFor();
    await expect.poll(() => sentImage.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(120);
    expect(await page.locator('#parley-widget .chip').isHidden()).toBe(true);

    // The host page's styles do not reach inside (its buttons are green; the widget's are not).
    const color = await page
      .locator('#parley-widget button.send')
      .evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { color: string } }).getComputedStyle(el).color);
    expect(color).toBe('rgb(255, 255, 255)');

    fs.mkdirSync(OUTPUT, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT, 'widget.png') });

    // Reload: the saved visitor token brings the conversation back.
    await page.reload();
    await expect.poll(() => widget(page).getAttribute('data-state')).toBe('ready');
    await page.locator('#parley-widget button.launcher').click();
    await page.locator('#parley-widget .msg.visitor', { hasText: 'Do you ship to Lisbon?' }).waitFor();
    await page.locator('#parley-widget .msg.agent', { hasText: 'Yes, we ship to Lisbon in 2 days.' }).waitFor();
    await page.locator('#parley-widget .msg.visitor img[alt="parcel.png"]').waitFor();
    expect(await page.locator('#parley-widget form.prechat').count()).toBe(0);
    // Escape closes the panel and gives the focus back to the launcher.
    await page.keyboard.press('Escape');
    expect(await page.locator('#parley-widget .panel').isHidden()).toBe(true);
    await page.close();
  });

  it('fits a 360 px wide screen', async () => {
    const page = await context.newPage();
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${base}/demo/widget`);
    await expect.poll(() => widget(page).getAttribute('data-state')).toBe('ready');
    await page.locator('#parley-widget button.launcher').click();
    const box = await page.locator('#parley-widget .panel').boundingBox();
    expect(box).not.toBeNull();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(360);
    await page.screenshot({ path: path.join(OUTPUT, 'widget-360.png') });
    await page.close();
  });

  it('verifies identities from another site: a valid signature chats, a forged one is refused with nothing stored', async () => {
    const w = await connectWidget(h, owner, {
      identityVerification: true,
      allowedOrigins: [siteBase],
      preChat: { name: 'off', email: 'off', phone: 'off' },
    });
    const good = await context.newPage();
    await good.goto(`${siteBase}/?key=${w.key}&identifier=customer-77&signature=${sign(w.secret, 'customer-77')}`);
    await expect.poll(() => widget(good).getAttribute('data-socket')).toBe('open');
    await good.locator('#parley-widget button.launcher').click();
    await good.locator('#parley-widget textarea').fill('Signed in and asking');
    await good.locator('#parley-widget button.send').click();
    await good.locator('#parley-widget .msg.visitor:not(.pending)', { hasText: 'Signed in and asking' }).waitFor();
    const profile = await h.database.db.kysely
      .selectFrom('profiles')
      .selectAll()
      .where('integration_id', '=', w.id)
      .executeTakeFirstOrThrow();
    expect(profile.social_id).toBe('u_customer-77');
    await good.close();

    const before = await widgetSnapshot(h);
    const forged = await context.newPage();
    await forged.goto(`${siteBase}/?key=${w.key}&identifier=customer-77&signature=${'0'.repeat(64)}`);
    await expect.poll(() => widget(forged).getAttribute('data-error')).toBe('identity_invalid');
    expect(await widgetSnapshot(h)).toEqual(before);
    await forged.close();
  });

  it('stays off a site whose origin the widget does not allow, storing nothing', async () => {
    const w = await connectWidget(h, owner, { allowedOrigins: ['https://shop.example'] });
    const before = await widgetSnapshot(h);
    const page = await context.newPage();
    await page.goto(`${siteBase}/?key=${w.key}`);
    await expect.poll(() => widget(page).getAttribute('data-error')).toBe('origin_not_allowed');
    expect(await page.locator('#parley-widget button.launcher').count()).toBe(0);
    expect(await widgetSnapshot(h)).toEqual(before);
    await page.close();
  });
});
