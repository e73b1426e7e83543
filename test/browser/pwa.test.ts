import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, launchChromium, root, startServer, type ServerProcess } from './agent-app-support.js';

/**
 * The installable agent app in Debian's chromium: the manifest and icons, the service worker
 * registered at the root, and its handling of a push message (delivered through the DevTools
 * protocol, since headless chromium cannot reach a real push service): a notification with the
 * customer's name and text, tagged by lead.
 */
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const navigator: any;

let server: ServerProcess;
let dataDir: string;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let page: Page;

beforeAll(async () => {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-pwa-'));
  server = await startServer({ PARLEY_DATA_DIR: dataDir });
  browser = await launchChromium();
  page = await browser.context.newPage();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the agent app as a PWA', () => {
  it('serves a manifest with installable icons', async () => {
    const res = await fetch(`${server.base}/manifest.webmanifest`);
    expect(res.headers.get('content-type')).toContain('application/manifest+json');
    const manifest = (await res.json()) as { display: string; start_url: string; icons: Array<{ src: string; sizes: string }> };
    expect(manifest).toMatchObject({ display: 'standalone', start_url: '/inbox' });
    expect(manifest.icons.map((i) => i.sizes)).toEqual(expect.arrayContaining(['192x192', '512x512']));
    for (const icon of manifest.icons) {
      const png = Buffer.from(await (await fetch(server.base + icon.src)).arrayBuffer());
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect(png.readUInt32BE(16)).toBe(Number(icon.sizes.split('x')[0]));
    }
    const html = await (await fetch(`${server.base}/`, { headers: { accept: 'text/html' } })).text();
    expect(html).toContain('rel="manifest"');
  });

  it('registers the service worker, which turns a push message into a notification for the lead', async () => {
    await call(server.base, 'POST', '/v1.3/auth/register', { body: { login: 'pwa@example.com', pass: 'correct horse 1', name: 'Pwa' } });
    await browser.context.grantPermissions(['notifications'], { origin: server.base });
    await page.goto(`${server.base}/login`);
    const scope = await page.evaluate(async () => {
      const reg = await navigator.serviceWorker.register('/sw.js');
      await navigator.serviceWorker.ready;
      return reg.scope as string;
    });
    expect(scope).toBe(`${server.base}/`);

    const cdp = await browser.context.newCDPSession(page);
    const registrationId = new Promise<string>((resolve) => {
      cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
        const reg = e.registrations.find((r) => r.scopeURL === `${server.base}/`);
        if (reg) resolve(reg.registrationId);
      });
    });
    await cdp.send('ServiceWorker.enable');
    const payload = { title: 'Customer alice', body: 'Is my order on its way?', leadId: 42, url: '/leads/42' };
    const push = { origin: server.base, registrationId: await registrationId, data: JSON.stringify(payload) };
    await expect
      .poll(
        async () => {
          // DevTools drops a push delivered while the worker is still starting on a busy machine;
          // delivering again is harmless: the notification's tag (the lead) replaces the one shown.
          await cdp.send('ServiceWorker.deliverPushMessage', push);
          return page.evaluate(async () => {
            const reg = await navigator.serviceWorker.ready;
            const shown = await reg.getNotifications();
            return shown.map((n: any) => ({ title: n.title, body: n.body, tag: n.tag, url: n.data?.url }));
          });
        },
        // The browser shows it when its service worker has run: seconds on a busy machine.
        { timeout: 15_000 },
      )
      .toEqual([{ title: 'Customer alice', body: 'Is my order on its way?', tag: 'lead-42', url: '/leads/42' }]);
  });
});
