import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { runCli } from '../src/cli.js';
import { loadConfig } from '../src/config.js';
import { ManualClock } from '../src/domain/clock.js';
import { createServices, type Services } from '../src/services.js';
import { buildApp } from '../src/app.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} };

// The CLI and the app share one storage: a data folder holding parley.db on SQLite, or this file's
// own PostgreSQL schema (reached through its URL) on PostgreSQL.
let dataDir: string;
let database: TestDatabase;
let env: Record<string, string>;
let app: FastifyInstance;
let services: Services;
// The CLI works on the system clock; the app's clock starts ten minutes behind it so that tokens it
// issues before a password reset are unambiguously older than the reset (no sleeping).
let clock: ManualClock;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-cli-'));
  database = await createTestDatabase(DIALECT === 'sqlite' ? { dataDir } : {});
  env = { PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: 'warn', ...(database.url ? { DATABASE_URL: database.url } : {}) };
  if (DIALECT === 'postgres') expect(database.url).toBeDefined();
  clock = new ManualClock(Date.now() - 10 * 60_000);
  services = createServices({ db: database.db, config: loadConfig(env), clock, log: silent });
  app = await buildApp({ services });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

interface Run {
  code: number;
  out: string;
  err: string;
}

async function cli(...argv: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const sink = { log: (...a: unknown[]) => void out.push(a.join(' ')), error: (...a: unknown[]) => void err.push(a.join(' ')) };
  const code = await runCli(argv, env, sink as unknown as Console);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const login = (loginName: string, pass: string) =>
  app.inject({ method: 'POST', url: '/v1.3/auth/login', payload: { login: loginName, pass } });
const me = (token: string) => app.inject({ method: 'GET', url: '/v1.3/account/me', headers: { authorization: `Bearer ${token}` } });
const tariff = (token: string) =>
  app.inject({ method: 'GET', url: '/v1.3/account/me/tariff', headers: { authorization: `Bearer ${token}` } });

/**
 * Resolves once the app's database has heard that employee `userId`'s row changed, or that
 * anything may have (PostgreSQL's row change feed, db/database.ts); at once where there is no
 * feed (SQLite).
 */
function userChangeHeard(userId: number): Promise<void> {
  const feed = database.db.changes;
  if (!feed) return Promise.resolve();
  return new Promise((resolve) => {
    const off = feed.subscribe('users', (id) => {
      if (id !== undefined && id !== userId) return;
      off();
      resolve();
    });
  });
}

let seq = 0;
async function createAccount(): Promise<{ id: number; login: string; pass: string }> {
  const loginName = `cli${++seq}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const pass = 'operator-chosen-pass';
  const run = await cli('account:create', '--login', loginName, '--password', pass, '--name', `Shop ${seq}`);
  expect(run, run.err).toMatchObject({ code: 0, err: '' });
  const match = /created account (\d+) with owner (\S+)/.exec(run.out);
  expect(match, run.out).not.toBeNull();
  expect(match![2]).toBe(loginName);
  return { id: Number(match![1]), login: loginName, pass };
}

async function accountCount(): Promise<number> {
  return (await services.accounts.list()).length;
}

beforeEach(() => {
  clock.set(Date.now() - 10 * 60_000);
});

describe('account:create', () => {
  it('creates an account whose owner can sign in through the API', async () => {
    const account = await createAccount();
    const res = await login(account.login, account.pass);
    expect(res.statusCode).toBe(200);
    const body = (await me(res.json().accessToken.token)).json();
    expect(body.account).toEqual({ id: account.id, status: 'active' });
    expect(body.user).toMatchObject({ login: account.login, role: 'owner', name: `Shop ${seq}` });
  });

  it('refuses a login that is already taken', async () => {
    const account = await createAccount();
    const before = await accountCount();
    const run = await cli('account:create', '--login', account.login, '--password', 'another-password', '--name', 'Dup');
    expect(run.code).toBe(1);
    expect(run.err).toMatch(/already registered/);
    expect(await accountCount()).toBe(before);
  });
});

describe('account:list', () => {
  it('shows every account with its owner, status and plan', async () => {
    const account = await createAccount();
    const run = await cli('account:list');
    expect(run.code).toBe(0);
    const lines = run.out.split('\n');
    expect(lines[0]).toMatch(/^id\tname\towner\tstatus\tplan$/);
    const row = lines.find((l) => l.startsWith(`${account.id}\t`));
    expect(row, run.out).toBeDefined();
    expect(row!.split('\t')).toEqual([
      String(account.id),
      `Shop ${seq}`,
      account.login,
      'active',
      expect.stringMatching(/^expires \d{4}-/),
    ]);
    expect(lines.length - 1).toBe(await accountCount());
  });
});

describe('plan:set', () => {
  it('expires an account: /account/me says expired and the tariff shows the date', async () => {
    const account = await createAccount();
    const token = (await login(account.login, account.pass)).json().accessToken.token;
    expect((await me(token)).json().account.status).toBe('active');

    const run = await cli('plan:set', String(account.id), '--expiration', '2020-01-01');
    expect(run, run.err).toMatchObject({ code: 0, err: '' });
    expect(run.out).toContain('2020-01-01T00:00:00.000Z');

    const after = await me(token);
    expect(after.statusCode).toBe(200);
    expect(after.json().account).toEqual({ id: account.id, status: 'expired' });
    const t = await tariff(token);
    expect(t.statusCode).toBe(200);
    expect(t.json().expiration).toBe('2020-01-01T00:00:00.000Z');
    expect((await cli('account:list')).out.split('\n').find((l) => l.startsWith(`${account.id}\t`))).toContain('\texpired\t');
  });

  it('sets the other plan fields, leaving the rest as they were', async () => {
    const account = await createAccount();
    const token = (await login(account.login, account.pass)).json().accessToken.token;
    const before = (await tariff(token)).json();
    const run = await cli(
      'plan:set',
      String(account.id),
      '--trial',
      'true',
      '--value',
      '19.90',
      '--currency',
      'EUR',
      '--period',
      '12',
      '--price',
      '1990',
    );
    expect(run.code).toBe(0);
    expect((await tariff(token)).json()).toEqual({
      ...before,
      trial: true,
      value: '19.90',
      currency: 'EUR',
      period: 12,
      price: 1990,
    });
  });
});

describe('password:reset', () => {
  it('makes the old password and the old sessions fail and the new password work', async () => {
    const account = await createAccount();
    const old = (await login(account.login, account.pass)).json().accessToken.token;
    expect((await me(old)).statusCode).toBe(200);

    const owner = await database.db.kysely.selectFrom('users').select('id').where('login', '=', account.login).executeTakeFirstOrThrow();
    const heard = userChangeHeard(owner.id);
    const run = await cli('password:reset', '--login', account.login, '--password', 'the-new-password');
    expect(run, run.err).toMatchObject({ code: 0, err: '' });
    expect(run.out).toContain(account.login);
    // PostgreSQL: the app keeps employees' rows and learns of the CLI's change from its
    // notification (migration 0069), which may arrive after the CLI has answered.
    await heard;

    // The app's clock moves past the moment of the reset (the CLI ran on the system clock).
    clock.set(Date.now() + 60_000);
    expect((await me(old)).statusCode).toBe(401);
    expect((await login(account.login, account.pass)).statusCode).toBe(401);
    const fresh = await login(account.login, 'the-new-password');
    expect(fresh.statusCode).toBe(200);
    expect((await me(fresh.json().accessToken.token)).statusCode).toBe(200);
  });
});

describe('bad arguments', () => {
  it('exit 1 with a message and change nothing', async () => {
    const account = await createAccount();
    const token = (await login(account.login, account.pass)).json().accessToken.token;
    const tariffBefore = (await tariff(token)).json();
    const countBefore = await accountCount();

    const cases: Array<[string[], RegExp]> = [
      [['account:create', '--password', 'long-enough-pass', '--name', 'No Login'], /--login is required/],
      [['account:create', '--login', 'short@example.com', '--password', 'short', '--name', 'X'], /--password must have at least 8/],
      [['account:create', '--login', 'not-an-email', '--password', 'long-enough-pass', '--name', 'X'], /--login must be an e-mail/],
      [['account:create', '--login', 'x@example.com', '--password', 'long-enough-pass', '--name', 'X', '--bogus', '1'], /bogus/],
      [['account:frobnicate'], /unknown command "account:frobnicate"/],
      [['plan:set', 'abc', '--expiration', '2020-01-01'], /accountId must be an integer/],
      [['plan:set', '1.5', '--expiration', '2020-01-01'], /accountId must be an integer/],
      [['plan:set', '--expiration', '2020-01-01'], /accountId must be an integer/],
      [['plan:set', String(account.id), '--expiration', 'next tuesday'], /--expiration must be an ISO 8601 date/],
      [['plan:set', String(account.id), '--trial', 'yes'], /--trial must be true or false/],
      [['plan:set', String(account.id), '--value', '12,50'], /--value must be a decimal/],
      [['plan:set', String(account.id), '--period', 'monthly'], /--period must be an integer/],
      [['plan:set', '999999999', '--expiration', '2020-01-01'], /not found/i],
      [['password:reset', '--login', account.login, '--password', 'short'], /--password must have at least 8/],
      [['password:reset', '--password', 'long-enough-pass'], /--login is required/],
      [['password:reset', '--login', 'nobody@example.com', '--password', 'long-enough-pass'], /no owner/i],
    ];
    for (const [argv, message] of cases) {
      const run = await cli(...argv);
      expect(run.code, argv.join(' ')).toBe(1);
      expect(run.err, argv.join(' ')).toMatch(message);
      expect(run.out, argv.join(' ')).toBe('');
    }

    expect(await accountCount()).toBe(countBefore);
    expect((await tariff(token)).json()).toEqual(tariffBefore);
    expect((await me(token)).statusCode).toBe(200);
    expect((await login(account.login, account.pass)).statusCode).toBe(200);
  });

  it('without a command prints the usage and exits 1; help exits 0', async () => {
    const none = await cli();
    expect(none.code).toBe(1);
    expect(none.out).toMatch(/Usage: parley <command>/);
    const help = await cli('help');
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/account:create/);
  });
});
