import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from '../helpers/harness.js';
import { connectWidget } from '../widget-support.js';
import { en } from '../../src/i18n/en.js';

/**
 * The widget's language in a real browser (Debian's chromium): fixed to Russian inside an English
 * page and browser, and `auto` following a Russian browser. Every text the widget writes itself is
 * Russian then (checked against the English texts of src/i18n/en.ts); the owner's own texts stay.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// The page's globals, inside page.evaluate (this file is type-checked without the DOM library).
declare const document: { getElementById(id: string): { shadowRoot: BrowserShadow | null } | null };
interface BrowserShadow {
  querySelectorAll(selector: string): Iterable<{
    tagName: string;
    getAttribute(name: string): string | null;
    childNodes: Iterable<{ nodeType: number; textContent: string | null }>;
  }>;
}

let h: Harness;
let owner: SignedUp;
let base: string;
let site: http.Server;
let siteBase: string;
let browser: Browser;
let english: string[];

beforeAll(async () => {
  const { buildWidget } = (await import(pathToFileURL(path.join(root, 'scripts', 'build-widget.mjs')).href)) as {
    buildWidget: (o: { quiet: boolean }) => Promise<{ gzipped: number }>;
  };
  const { gzipped } = await buildWidget({ quiet: true });
  expect(gzipped).toBeLessThan(60 * 1024);
  // Each English text, and the fixed start of each English text with a value in it.
  english = Object.values(en.widget)
    .map((v) => (typeof v === 'string' ? v : String((v as (x: string) => string)('\u0000')).split('\u0000')[0]).trim())
    .filter((text) => text.length >= 3);

  h = await createHarness();
  owner = await h.signUp();
  base = await h.app.listen({ port: 0, host: '127.0.0.1' });
  site = http.createServer((req, res) => {
    const key = new URL(req.url ?? '/', 'http://x').searchParams.get('key')?.replace(/[^A-Za-z0-9_-]/g, '') ?? '';
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(
      `<!doctype html><html lang="en"><head><title>Shop</title></head><body><h1>Our English shop</h1>` +
        `<script src="${base}/widget.js" data-parley-key="${key}" async></script></body></html>`,
    );
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  siteBase = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
  await h?.close();
});

/** Every text of the widget a visitor meets: visible text, labels, placeholders and titles. */
const widgetTexts = (page: Page) =>
  page.evaluate(() => {
    const shadow = document.getElementById('parley-widget')?.shadowRoot;
    if (!shadow) return [];
    const out: string[] = [];
    for (const el of shadow.querySelectorAll('*')) {
      if (el.tagName === 'STYLE') continue;
      for (const attr of ['aria-label', 'placeholder', 'title']) {
        const v = el.getAttribute(attr);
        if (v) out.push(v);
      }
      for (const node of el.childNodes) if (node.nodeType === 3 && node.textContent?.trim()) out.push(node.textContent.trim());
    }
    return out;
  });

async function visit(locale: string, settings: Record<string, unknown>) {
  const widget = await connectWidget(h, owner, { preChat: { name: 'required', email: 'optional', phone: 'off' }, ...settings });
  const context = await browser.newContext({ locale, extraHTTPHeaders: { 'accept-language': locale } });
  const page = await context.newPage();
  await page.goto(`${siteBase}/?key=${widget.key}`);
  await page.locator('#parley-widget[data-state=ready]').waitFor({ state: 'attached' });
  await page.locator('#parley-widget button.launcher').click();
  return { page, context };
}

async function expectRussian(page: Page) {
  const texts = await widgetTexts(page);
  for (const word of english) expect(texts.join('\n'), word).not.toContain(word);
  return texts;
}

describe('widget language', () => {
  it('set to ru inside an English page and browser: the form, buttons and errors speak Russian', async () => {
    const { page, context } = await visit('en-US', { language: 'ru', title: 'Shop support' });
    const form = page.locator('#parley-widget form.prechat');
    await form.waitFor();
    await form.locator('button[type=submit]').click();
    await expect.poll(() => form.locator('.error').textContent()).toBe('Заполните обязательные поля.');
    const texts = await expectRussian(page);
    expect(texts).toEqual(
      expect.arrayContaining(['Начать чат', 'Закрыть чат: Shop support', 'Закрыть чат', 'Здравствуйте! Чем можем помочь?']),
    );
    // The owner's own title stays as written.
    expect(texts).toContain('Shop support');
    expect(await page.locator('#parley-widget').getAttribute('lang')).toBe('ru');

    await form.locator('input[name=name]').fill('Ирина');
    await form.locator('button[type=submit]').click();
    const input = page.locator('#parley-widget textarea');
    await input.waitFor();
    expect(await input.getAttribute('placeholder')).toBe('Напишите сообщение…');
    await expectRussian(page);
    await context.close();
  });

  it('auto follows a Russian browser; auto in an English browser stays English', async () => {
    const ru = await visit('ru-RU', {});
    await ru.page.locator('#parley-widget form.prechat').waitFor();
    const texts = await expectRussian(ru.page);
    expect(texts).toEqual(expect.arrayContaining(['Напишите нам', 'Начать чат']));
    await ru.context.close();

    const en = await visit('en-US', {});
    await en.page.locator('#parley-widget form.prechat').waitFor();
    expect(await widgetTexts(en.page)).toEqual(expect.arrayContaining(['Chat with us', 'Start chat']));
    await en.context.close();
  });

  it('a language outside the list is 400 and changes nothing', async () => {
    const widget = await connectWidget(h, owner, {});
    for (const language of ['de', '', 'RU', 1, null]) {
      const res = await h.request({
        method: 'PUT',
        url: `/v1.3/integrations/${widget.id}/widget`,
        token: owner.access,
        payload: { language },
      });
      expect(res.statusCode, JSON.stringify(language)).toBe(400);
    }
    const bad = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'widget', settings: { language: 'xx' } },
    });
    expect(bad.statusCode).toBe(400);
    const now = await h.request({ method: 'GET', url: `/v1.3/integrations/${widget.id}/widget`, token: owner.access });
    expect(now.json().settings.language).toBe('auto');
    const set = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${widget.id}/widget`,
      token: owner.access,
      payload: { language: 'ru' },
    });
    expect(set.json().settings.language).toBe('ru');
  });
});
