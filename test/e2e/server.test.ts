import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';

// The real server process, as `npm start` runs it: dist/main.js, configured by the environment only.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const START_TIMEOUT = 20_000;
const EXIT_TIMEOUT = 10_000;

let dataDir: string;
let database: TestDatabase | undefined;

beforeAll(async () => {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as {
    ensureBuilt: () => void;
  };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-e2e-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  for (const server of started) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

interface Server {
  child: ChildProcess;
  base: string;
  /** Every stdout line so far (pino JSON), parsed where it parses. */
  lines: Array<{ msg?: string; raw: string }>;
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: Server[] = [];

async function startServer(): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Only this test's settings: no inherited database, secret or listen address.
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  Object.assign(env, { PORT: '0', HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_SIGNUP: 'open', PARLEY_LOG_LEVEL: 'info' });
  if (database?.url) env.DATABASE_URL = database.url;

  const child = spawn(process.execPath, [path.join(root, 'dist', 'main.js')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Server['lines'] = [];
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const server: Server = { child, base: '', lines, stderr, exited };
  started.push(server);

  const serving = new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (raw) => {
      let msg: string | undefined;
      try {
        msg = (JSON.parse(raw) as { msg?: string }).msg;
      } catch {
        msg = undefined;
      }
      lines.push({ msg, raw });
      const match = msg && /serving (http:\/\/[^\s]+)/.exec(msg);
      if (match) resolve(match[1]);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`server exited (${code ?? signal}) before serving:\n${lines.map((l) => l.raw).join('\n')}\n${stderr.join('')}`)),
    );
  });
  server.base = await withTimeout(serving, START_TIMEOUT, 'the "serving" log line');
  return server;
}

async function stop(server: Server, signal: NodeJS.Signals) {
  server.child.kill(signal);
  return withTimeout(server.exited, EXIT_TIMEOUT, `exit after ${signal}`);
}

async function call(server: Server, method: string, url: string, opts: { token?: string; body?: unknown } = {}) {
  const res = await fetch(server.base + url, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
}

describe('the server process', () => {
  const credentials = { login: 'e2e-owner@example.com', pass: 'e2e password 123', name: 'E2E Shop' };
  let accessToken: string;
  let accountId: number;

  it('serves on a free port, announces it once, and exits 0 on SIGTERM', async () => {
    const server = await startServer();
    expect(server.base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(server.base).port)).toBeGreaterThan(0);

    const health = await call(server, 'GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('ok');

    const registered = await call(server, 'POST', '/v1.3/auth/register', { body: credentials });
    expect(registered.status).toBe(200);
    accessToken = registered.body.accessToken.token;
    const me = await call(server, 'GET', '/v1.3/account/me', { token: accessToken });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ login: credentials.login, role: 'owner' });
    accountId = me.body.account.id;

    const { code, signal } = await stop(server, 'SIGTERM');
    expect(signal).toBeNull();
    expect(code).toBe(0);
    const serving = server.lines.filter((l) => l.raw.includes('serving'));
    expect(serving).toHaveLength(1);
    // It runs on the storage this suite runs on (the test's PostgreSQL schema, or SQLite in the folder).
    expect(serving[0].msg).toContain(`(${DIALECT})`);
    if (DIALECT === 'sqlite') expect(fs.existsSync(path.join(dataDir, 'parley.db'))).toBe(true);
    expect(server.lines.some((l) => l.msg === 'shutting down')).toBe(true);
    // Nothing about the password reached the log.
    expect(server.lines.some((l) => l.raw.includes(credentials.pass))).toBe(false);
  });

  it('keeps sessions across a restart on the same data folder, and exits 0 on SIGINT', async () => {
    expect(accessToken).toBeDefined();
    const server = await startServer();
    // The JWT secret was generated into the data folder on the first run and read back now.
    expect(fs.existsSync(path.join(dataDir, 'jwt-secret'))).toBe(true);
    const me = await call(server, 'GET', '/v1.3/account/me', { token: accessToken });
    expect(me.status).toBe(200);
    expect(me.body.account.id).toBe(accountId);

    const login = await call(server, 'POST', '/v1.3/auth/login', { body: { login: credentials.login, pass: credentials.pass } });
    expect(login.status).toBe(200);
    expect((await call(server, 'GET', '/v1.3/account/me', { token: login.body.accessToken.token })).status).toBe(200);

    const { code, signal } = await stop(server, 'SIGINT');
    expect(signal).toBeNull();
    expect(code).toBe(0);
    expect(server.lines.filter((l) => l.raw.includes('serving'))).toHaveLength(1);
  });
});
