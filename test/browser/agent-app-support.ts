import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const OUTPUT = path.join(root, 'test-output');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Debian's chromium, headless, with a fresh profile; `close` removes the profile too. */
export async function launchChromium(
  viewport = { width: 1280, height: 800 },
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
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
    viewport,
  });
  return {
    context,
    close: async () => {
      await context.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

export { startSmtp, decodeBody, type ReceivedMail } from '../helpers/smtp.js';

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as AddressInfo).port;
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

export interface ServerProcess {
  base: string;
  child: ChildProcess;
  stop: () => Promise<void>;
}

/** The real server process (dist/main.js) on a free port, configured by the environment only. */
export async function startServer(extraEnv: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  Object.assign(env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    PARLEY_PUBLIC_URL: `http://127.0.0.1:${port}`,
    PARLEY_LOG_LEVEL: 'info',
    ...extraEnv,
  });
  const child = spawn(process.execPath, [path.join(root, 'dist', 'main.js')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const log: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (c: string) => log.push(c));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${log.join('')}`)), 20_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      log.push(line);
      const m = /serving (http:\/\/[^\s"]+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then(() => reject(new Error(`server exited:\n${log.join('\n')}`)));
  });
  return {
    base,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** A JSON call to the server (assertions go through the public API). */
export async function call(base: string, method: string, url: string, opts: { token?: string; body?: unknown } = {}) {
  const res = await fetch(base + url, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

/** Builds the server and the app when needed; answers the gzipped bytes of the app's initial JavaScript, printed. */
export async function ensureAppBuilt(): Promise<number> {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  const { initialJsGzipped } = (await import(pathToFileURL(path.join(root, 'scripts', 'build-app.mjs')).href)) as {
    initialJsGzipped: () => { gzipped: number };
  };
  const { gzipped } = initialJsGzipped();
  console.log(`agent app: initial JavaScript ${(gzipped / 1024).toFixed(1)} KiB gzipped`);
  return gzipped;
}

/** Signs in through the app's form and waits for the inbox. */
export async function signInForm(page: import('playwright-core').Page, login: string, pass: string): Promise<void> {
  await page.fill('input[name=login]', login);
  await page.fill('input[name=pass]', pass);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/inbox$/);
}

const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core in the page: no serious or critical violation (the list names each one found). */
export async function expectNoSeriousAxe(page: Page, name: string): Promise<void> {
  if (!(await page.evaluate(() => !!(globalThis as any).axe))) await page.evaluate(AXE);
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as any).axe;
    const r = await axe.run((globalThis as any).document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')) }));
  })) as Array<{ id: string; impact: string; nodes: string[] }>;
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad, `${name}: ${JSON.stringify(bad)}`).toEqual([]);
}

/** The first-run screen: creates the installation's first account and waits for the inbox. */
export async function setUpFirstAccount(page: Page, base: string, owner: { name: string; login: string; pass: string }): Promise<void> {
  await page.goto(`${base}/`);
  await page.getByRole('heading', { name: 'Welcome to Parley' }).waitFor();
  await page.fill('input[name=name]', owner.name);
  await page.fill('input[name=login]', owner.login);
  await page.fill('input[name=pass]', owner.pass);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/inbox$/);
}
