import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig, type Config } from '../../src/config.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { Logger } from '../../src/domain/context.js';
import { createServices, type Services } from '../../src/services.js';
import { buildApp } from '../../src/app.js';
import type { RouteDef } from '../../src/api/route.js';
import { API_ROUTES } from '../../src/api/routes/index.js';
import { createTestDatabase, type TestDatabase } from './database.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} };

export interface Harness {
  app: FastifyInstance;
  services: Services;
  clock: ManualClock;
  config: Config;
  database: TestDatabase;
  dataDir: string;
  /** app.inject with JSON defaults; `token` becomes `Authorization: Bearer <token>`. */
  request(opts: InjectOptions & { token?: string }): Promise<LightMyRequestResponse>;
  /** Registers an account through the API; returns its owner's tokens and ids. */
  signUp(login?: string, pass?: string, name?: string): Promise<SignedUp>;
  close(): Promise<void>;
}

export interface SignedUp {
  access: string;
  refresh: string;
  accountId: number;
  userId: number;
  login: string;
  pass: string;
}

let counter = 0;

export async function createHarness(
  /**
   * `log`: the domain logger (silent unless a test captures what is logged). `sqliteFile`: SQLite
   * in `dataDir/parley.db` instead of memory, so that a second connection can open it. `migrateTo`:
   * the schema only up to that migration (a test of a later migration migrates the rest itself).
   * `listen`: on PostgreSQL, the config's DATABASE_URL is the test schema's, so that the services
   * LISTEN for other processes' NOTIFYs as a server's do.
   */
  opts: {
    env?: Record<string, string>;
    routes?: RouteDef[];
    log?: Logger;
    sqliteFile?: boolean;
    migrateTo?: string;
    listen?: boolean;
  } = {},
): Promise<Harness> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-test-'));
  let config = loadConfig({
    PARLEY_DATA_DIR: dataDir,
    PARLEY_JWT_SECRET: 'test-secret-that-is-long-enough-for-hs256-0123456789',
    PARLEY_SIGNUP: 'open',
    ...opts.env,
  });
  const database = await createTestDatabase({ ...(opts.sqliteFile ? { dataDir } : {}), migrateTo: opts.migrateTo });
  if (opts.listen && database.url) config = { ...config, databaseUrl: database.url };
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 12, 0, 0));
  const services = createServices({ db: database.db, config, clock, log: opts.log ?? silent });
  const app = await buildApp({ services, routes: opts.routes ?? API_ROUTES });
  await app.ready();

  const request: Harness['request'] = ({ token, headers, ...rest }) =>
    app.inject({
      ...rest,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    });

  const signUp: Harness['signUp'] = async (login, pass = 'correct horse battery', name = 'Owner') => {
    login ??= `owner${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const res = await request({ method: 'POST', url: '/v1.3/auth/register', payload: { login, pass, name } });
    if (res.statusCode !== 200) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`);
    const body = res.json();
    const me = await request({ method: 'GET', url: '/v1.3/account/me', token: body.accessToken.token });
    return {
      access: body.accessToken.token,
      refresh: body.refreshToken.token,
      accountId: me.json().account.id,
      userId: me.json().user.id,
      login,
      pass,
    };
  };

  return {
    app,
    services,
    clock,
    config,
    database,
    dataDir,
    request,
    signUp,
    close: async () => {
      await app.close();
      await database.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
