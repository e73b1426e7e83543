import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { call as callBase, ensureBuilt, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';

let dataDir: string;
let database: TestDatabase | undefined;

beforeAll(async () => {
  await ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-e2e-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  for (const server of started) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

type Server = ServerProcess;
const started: Server[] = [];

async function startServer(): Promise<Server> {
  const server = await startServerProcess({ PARLEY_DATA_DIR: dataDir, ...(database?.url ? { DATABASE_URL: database.url } : {}) });
  started.push(server);
  return server;
}

const stop = (server: Server, signal: NodeJS.Signals) => stopServerProcess(server, signal);

const call = (server: Server, method: string, url: string, opts: { token?: string; body?: unknown } = {}) =>
  callBase(server.base, method, url, opts);

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
