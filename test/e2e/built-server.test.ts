import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { call, ensureBuilt, root, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';

// The build `npm start`, the CLI and the tests share: the server bundled into dist/main.js
// (scripts/build-server.mjs), the CLI from tsc's dist/ beside it.
const run = promisify(execFile);
let dataDir: string;
let database: TestDatabase | undefined;
let server: ServerProcess | undefined;

function settings(): Record<string, string> {
  return { PARLEY_DATA_DIR: dataDir, ...(database?.url ? { DATABASE_URL: database.url } : {}) };
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
  if (DIALECT === 'postgres') database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  if (server) await stopServerProcess(server, 'SIGTERM');
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the built server', () => {
  it('is one bundled file that imports none of the compiled modules beside it', () => {
    const bundle = fs.readFileSync(path.join(root, 'dist', 'main.js'), 'utf8');
    expect(bundle).not.toMatch(/from\s+["']\.{1,2}\//);
    expect(bundle).toContain('function buildApp(');
  });

  it('serves /health, the widget and an account the CLI made', { timeout: 120_000 }, async () => {
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

    // The CLI's read commands run beside the serving process, from the same build.
    expect(await cli('account:list')).toContain('built@example.com');
    expect(await cli('help')).toContain('account:create');
  });
});
