import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SMTPServer } from 'smtp-server';
import { sql } from 'kysely';
import { MIGRATION_NAMES } from '../../src/db/migrate.js';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { startSmtp, type ReceivedMail } from '../helpers/smtp.js';
import { call, ensureBuilt, root, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';

// The build `npm start`, the CLI and the tests share: the server bundled into dist/server.cjs and run
// by dist/main.js through V8's code cache (scripts/build-server.mjs, scripts/server-loader.mjs), the
// CLI from tsc's dist/ beside it.
const run = promisify(execFile);
let dataDir: string;
let database: TestDatabase | undefined;
let server: ServerProcess | undefined;
let smtp: { server: SMTPServer; port: number } | undefined;
const inbox: ReceivedMail[] = [];

function settings(): Record<string, string> {
  return {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_SMTP_URL: `smtp://127.0.0.1:${smtp?.port}`,
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  };
}

async function cli(...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  const { stdout } = await run(process.execPath, [path.join(root, 'bin', 'parley.mjs'), ...args], {
    cwd: root,
    env: { ...env, ...settings() },
  });
  return stdout;
}

beforeAll(async () => {
  await ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-built-'));
  smtp = await startSmtp(inbox);
  if (DIALECT === 'postgres') database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  if (server) await stopServerProcess(server, 'SIGTERM');
  await database?.drop();
  await new Promise<void>((resolve) => (smtp ? smtp.server.close(() => resolve()) : resolve()));
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the built server', () => {
  it('is one bundled file that imports none of the compiled modules beside it', () => {
    const bundle = fs.readFileSync(path.join(root, 'dist', 'server.cjs'), 'utf8');
    // esbuild writes its code's strings in double quotes (the packages' comments keep theirs).
    expect(bundle).not.toMatch(/(require|import)\("\.{1,2}\//);
    expect(bundle).toContain('function buildApp(');
  });

  it("comes with a code cache of the build's own bundle that this Node.js accepts", () => {
    const dist = path.join(root, 'dist');
    const hash = /const BUNDLE_HASH = "([0-9a-f]{16})"/.exec(fs.readFileSync(path.join(dist, 'main.js'), 'utf8'))?.[1];
    expect(hash).toBeDefined();
    const source = fs.readFileSync(path.join(dist, 'server.cjs'), 'utf8');
    // The loader's wrapping, compiled (not run) with the cache the build made.
    const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`;
    const script = new vm.Script(wrapped, {
      filename: path.join(dist, 'server.cjs'),
      cachedData: fs.readFileSync(path.join(dist, `server.${hash}.cache`)),
    });
    expect(script.cachedDataRejected).toBe(false);
  });

  it('serves from a rejected code cache and replaces it', { timeout: 60_000 }, async () => {
    // A copy of the build in a folder of its own beside dist/ (the root and the packages are found
    // from there as from dist/), its cache replaced by bytes V8 rejects.
    const copy = fs.mkdtempSync(path.join(root, '.built-copy-'));
    try {
      for (const name of ['main.js', 'server.cjs']) fs.copyFileSync(path.join(root, 'dist', name), path.join(copy, name));
      const hash = /const BUNDLE_HASH = "([0-9a-f]{16})"/.exec(fs.readFileSync(path.join(copy, 'main.js'), 'utf8'))?.[1];
      const cacheFile = path.join(copy, `server.${hash}.cache`);
      fs.writeFileSync(cacheFile, 'not a code cache');

      const copied = await startServerProcess(settings(), path.join(copy, 'main.js'));
      try {
        expect((await call(copied.base, 'GET', '/health')).status).toBe(200);
        // Written half a second after the server listens: wait for that write, not for a time.
        const deadline = Date.now() + 30_000;
        while (fs.statSync(cacheFile).size < 1000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        expect(fs.statSync(cacheFile).size).toBeGreaterThan(1_000_000);
      } finally {
        await stopServerProcess(copied, 'SIGTERM');
      }
    } finally {
      fs.rmSync(copy, { recursive: true, force: true });
    }
  });

  it("makes a new database's schema at its first start (PostgreSQL: from the script dist/main.js sends first)", {
    timeout: 60_000,
  }, async () => {
    const hash = /const BUNDLE_HASH = "([0-9a-f]{16})"/.exec(fs.readFileSync(path.join(root, 'dist', 'main.js'), 'utf8'))?.[1];
    expect(fs.existsSync(path.join(root, 'dist', `server.${hash}.schema.sql`))).toBe(true);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-built-new-'));
    const empty = DIALECT === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
    try {
      const fresh = await startServerProcess({ PARLEY_DATA_DIR: folder, ...(empty?.url ? { DATABASE_URL: empty.url } : {}) });
      try {
        expect((await call(fresh.base, 'GET', '/health')).status).toBe(200);
      } finally {
        await stopServerProcess(fresh, 'SIGTERM');
      }
      const made = empty ?? (await createTestDatabase({ dataDir: folder, empty: true }));
      const { rows } = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(made.db.kysely);
      expect(rows.map((r) => r.name)).toEqual([...MIGRATION_NAMES].sort());
      const installation = await sql<{ id: string }>`select id from installation`.execute(made.db.kysely);
      expect(installation.rows).toHaveLength(1);
      if (!empty) await made.drop();
    } finally {
      await empty?.drop();
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('serves /health, the widget, an account the CLI made and its first mail', { timeout: 120_000 }, async () => {
    const created = await cli('account:create', '--login', 'built@example.com', '--password', 'built password 1', '--name', 'Built');
    expect(created).toMatch(/^created account \d+ with owner built@example\.com/);

    server = await startServerProcess(settings());
    const health = await call(server.base, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('ok');

    const widget = await fetch(`${server.base}/widget.js`);
    expect(widget.status).toBe(200);
    expect(widget.headers.get('content-type')).toMatch(/javascript/);
    expect((await widget.text()).length).toBeGreaterThan(1000);

    // The OpenAPI plugins are bundled: the UI's files come from its package, YAML loads when asked for.
    const ui = await fetch(`${server.base}/docs/static/logo.svg`);
    expect(ui.status).toBe(200);
    expect(await ui.text()).toContain('<svg');
    const yaml = await fetch(`${server.base}/docs/yaml`);
    expect(yaml.status).toBe(200);
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0\ninfo:\n {2}title: Parley API/);

    const login = await call(server.base, 'POST', '/v1.3/auth/login', { body: { login: 'built@example.com', pass: 'built password 1' } });
    expect(login.status).toBe(200);

    // nodemailer stays outside the bundle and is loaded by the first mail: an invitation.
    const invited = await call(server.base, 'POST', '/v1.3/managers', {
      token: login.body.accessToken.token,
      body: { login: 'invited@example.com', sources: [] },
    });
    expect(invited.status).toBe(200);
    const deadline = Date.now() + 30_000;
    while (inbox.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(inbox.map((m) => m.to)).toEqual([['invited@example.com']]);

    // The CLI's read commands run beside the serving process, from the same build.
    expect(await cli('account:list')).toContain('built@example.com');
    expect(await cli('help')).toContain('account:create');
  });
});
