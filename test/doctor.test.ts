import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATION_NAMES } from '../src/db/migrate.js';
import { installationId } from '../src/domain/installation/installation.repo.js';
import { createHarness, type Harness } from './helpers/harness.js';
import { createTestDatabase, DIALECT } from './helpers/database.js';
import { startSmtp } from './helpers/smtp.js';
import { check, doctor, listen, makeCertificate, report, snapshot, type Report } from './helpers/doctor.js';

// `parley doctor` against a real installation: the test database (SQLite file in the harness's data
// folder, or a PostgreSQL schema of its own), an https front (a TLS server with a certificate made
// here, passing requests to the app, as Caddy would) and a real SMTP peer on loopback.

/** The checks in the order they are printed. */
const CHECKS = [
  'node',
  'data-folder',
  'disk-space',
  'database',
  ...(DIALECT === 'postgres' ? ['postgres-version'] : []),
  'migrations',
  'secrets',
  'public-url',
  'smtp',
  'integrations',
  'webhooks',
  'clock',
];

const ENCRYPTION_KEY = crypto.randomBytes(32).toString('base64url');
const JWT_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

let h: Harness;
let tmp: string;
let front: https.Server;
let frontUrl: string;
let impostor: https.Server;
let impostorUrl: string;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let silent: net.Server;
let silentPort: number;
let closedPort: number;
const held: net.Socket[] = [];

function healthyEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PARLEY_DATA_DIR: h.dataDir,
    PARLEY_JWT_SECRET: JWT_SECRET,
    PARLEY_ENCRYPTION_KEY: ENCRYPTION_KEY,
    PARLEY_PUBLIC_URL: frontUrl,
    PARLEY_SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    NODE_EXTRA_CA_CERTS: path.join(tmp, 'cert.pem'),
    ...(h.database.url ? { DATABASE_URL: h.database.url } : {}),
    ...extra,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-doctor-'));
  h = await createHarness({ sqliteFile: true, env: { PARLEY_ENCRYPTION_KEY: ENCRYPTION_KEY } });
  const { key, cert } = makeCertificate(tmp);
  front = https.createServer({ key, cert }, async (req, res) => {
    const answer = await h.app.inject({ method: req.method as 'GET', url: req.url ?? '/' });
    res.writeHead(answer.statusCode, answer.headers as Record<string, string>);
    res.end(answer.rawPayload);
  });
  frontUrl = `https://127.0.0.1:${await listen(front)}`;
  impostor = https.createServer({ key, cert }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'parley-installation': crypto.randomUUID() });
    res.end('{"status":"ok","version":"0.1.0"}');
  });
  impostorUrl = `https://127.0.0.1:${await listen(impostor)}`;
  smtp = await startSmtp([]);
  // Accepts connections and never says a word: what a host behind a dropping firewall looks like.
  silent = net.createServer((socket) => void held.push(socket));
  silentPort = await listen(silent);
  const closed = net.createServer();
  closedPort = await listen(closed);
  await new Promise((resolve) => closed.close(() => resolve(undefined)));
});

afterAll(async () => {
  for (const socket of held) socket.destroy();
  await Promise.all([front, impostor, silent].map((s) => new Promise((resolve) => s?.close(resolve))));
  await new Promise<void>((resolve) => (smtp ? smtp.server.close(() => resolve()) : resolve()));
  await h?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('parley doctor on a healthy installation', () => {
  it('passes every check, exits 0, and changes nothing', async () => {
    const before = snapshot(h.dataDir);
    const run = await doctor(healthyEnv());
    expect(run.code, run.out).toBe(0);
    expect(run.out).toMatch(/^Parley \S+ doctor: (SQLite|PostgreSQL) /);
    expect(run.out).not.toMatch(/FAIL/);
    expect(run.out).toMatch(/\d+ of \d+ checks passed; 0 failed; \d+ skipped$/);
    expect(snapshot(h.dataDir)).toEqual(before);

    const { code, report: r } = await report(healthyEnv());
    expect(code).toBe(0);
    expect(r.ok).toBe(true);
    // Every check passes but the clock's, which SQLite skips (one process, one clock).
    const passed = CHECKS.filter((name) => DIALECT === 'postgres' || name !== 'clock');
    for (const name of passed) expect(check(r, name).status, `${name}: ${check(r, name).detail}`).toBe('pass');
    expect(check(r, 'public-url').detail).toContain('answers as this installation');
    expect(check(r, 'migrations').detail).toContain(`all ${MIGRATION_NAMES.length} migrations`);
    if (DIALECT === 'postgres') {
      expect(check(r, 'clock').detail).toMatch(/the database's clock is \d+ ms (ahead of|behind) this machine's/);
    } else {
      expect(check(r, 'clock').status).toBe('skip');
    }
  });

  it('answers --json with one entry per check, a fix on each failure', async () => {
    const { code, report: r } = await report(healthyEnv({ PARLEY_PUBLIC_URL: 'http://parley.example.com' }));
    expect(code).toBe(1);
    expect(Object.keys(r).sort()).toEqual(['checks', 'database', 'ok', 'version']);
    expect(r.ok).toBe(false);
    expect(r.database).toMatch(DIALECT === 'postgres' ? /^PostgreSQL postgres:\/\// : /^SQLite .*parley\.db$/);
    const names = r.checks.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(CHECKS);
    for (const c of r.checks) {
      expect(['pass', 'fail', 'skip']).toContain(c.status);
      expect(typeof c.title).toBe('string');
      expect(c.detail.length).toBeGreaterThan(0);
      expect(c.fix === undefined, c.name).toBe(c.status !== 'fail');
    }
  });
});

describe('parley doctor reports each failure with its fix and exits 1', () => {
  it('a read-only data folder', async () => {
    // Root writes through permission bits; the immutable flag stops root too, as a read-only mount would.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) execFileSync('chattr', ['+i', h.dataDir]);
    else fs.chmodSync(h.dataDir, 0o500);
    try {
      const { code, report: r } = await report(healthyEnv());
      expect(code).toBe(1);
      const folder = check(r, 'data-folder');
      expect(folder.status).toBe('fail');
      expect(folder.detail).toContain('is not writable by this user');
      expect(folder.fix).toMatch(/chown -R parley:parley .*ReadWritePaths/);
      expect(check(r, 'database').status).toBe('pass');
    } finally {
      if (asRoot) execFileSync('chattr', ['-i', h.dataDir]);
      else fs.chmodSync(h.dataDir, 0o700);
    }
  });

  it('a database that is down, within the timeout, creating nothing', async () => {
    const empty = fs.mkdtempSync(path.join(tmp, 'empty-'));
    const env =
      DIALECT === 'postgres'
        ? healthyEnv({ DATABASE_URL: `postgres://parley:db-password-42@127.0.0.1:${silentPort}/parley` })
        : healthyEnv({ PARLEY_DATA_DIR: empty, PARLEY_JWT_SECRET: JWT_SECRET });
    const run = await doctor(env, '--json', '--timeout', '0.5');
    expect(run.code).toBe(1);
    expect(run.ms).toBeLessThan(3000);
    const r = JSON.parse(run.out) as Report;
    const database = check(r, 'database');
    expect(database.status).toBe('fail');
    if (DIALECT === 'postgres') {
      expect(database.detail).toContain(`cannot reach PostgreSQL postgres://parley@127.0.0.1:${silentPort}/parley`);
      expect(database.fix).toContain('check DATABASE_URL');
      expect(run.out).not.toContain('db-password-42');
    } else {
      expect(database.detail).toBe(`no database at ${path.join(empty, 'parley.db')}`);
      expect(database.fix).toContain('start Parley once');
      expect(fs.readdirSync(empty)).toEqual([]);
    }
    for (const name of ['integrations', 'webhooks', 'clock']) expect(check(r, name).status).toBe('skip');
  });

  it('a database not migrated to this build, left as it was', async () => {
    const dataDir = fs.mkdtempSync(path.join(tmp, 'old-'));
    // Migrated up to the one before the installation id's, so that the public URL is not compared.
    const installation = MIGRATION_NAMES.indexOf('0120-installation');
    const old = await createTestDatabase({ dataDir, migrateTo: MIGRATION_NAMES[installation - 1] });
    const missing = MIGRATION_NAMES.length - installation;
    try {
      const env = healthyEnv({ PARLEY_DATA_DIR: dataDir, DATABASE_URL: old.url });
      const { code, report: r } = await report(env);
      expect(code).toBe(1);
      const migrations = check(r, 'migrations');
      expect(migrations.status).toBe('fail');
      expect(migrations.detail).toBe(
        `not migrated to this build: ${missing} of ${MIGRATION_NAMES.length} migrations not applied, the first 0120-installation`,
      );
      expect(migrations.fix).toContain('migrations run at every start');
      // Its database has no installation id yet: the public URL answers, but is not compared.
      expect(check(r, 'public-url').detail).toContain('not compared');
      const { rows } = await sql`select name from kysely_migration`.execute(old.db.kysely);
      expect(rows).toHaveLength(installation);

      // A database a newer build migrated: this build must not serve it.
      await sql`insert into kysely_migration (name, timestamp) values ('9999-from-a-newer-build', '2030-01-01')`.execute(old.db.kysely);
      const newer = check((await report(env)).report, 'migrations');
      expect(newer.status).toBe('fail');
      expect(newer.detail).toBe(
        'the database was migrated by a newer build of Parley (migrations this build does not know: 1, the first 9999-from-a-newer-build)',
      );
      expect(newer.fix).toContain('restore the backup taken before the upgrade');
    } finally {
      await old.drop();
    }
  });

  it('a missing secret, a placeholder left from deploy/parley.env, a secret file others can read', async () => {
    const missing = await report(healthyEnv({ PARLEY_JWT_SECRET: undefined }));
    expect(missing.code).toBe(1);
    expect(check(missing.report, 'secrets').detail).toContain(
      `no JWT signing secret: PARLEY_JWT_SECRET is unset and ${path.join(h.dataDir, 'jwt-secret')} does not exist`,
    );
    expect(check(missing.report, 'secrets').fix).toContain('start Parley once');
    // Neither secret anywhere: the detail names both and no empty list of the ones found.
    const none = check((await report(healthyEnv({ PARLEY_JWT_SECRET: undefined, PARLEY_ENCRYPTION_KEY: undefined }))).report, 'secrets');
    expect(none.detail).toContain('no credential encryption key');
    expect(none.detail).not.toMatch(/\(\)$/);

    const shipped = fs.readFileSync(new URL('../deploy/parley.env', import.meta.url), 'utf8');
    const placeholders = Object.fromEntries(
      [...shipped.matchAll(/^#?(\w+)=(.*change-me.*)$/gm)].map(([, name, value]) => [name, value.replace(/^"|"$/g, '')]),
    );
    expect(Object.keys(placeholders).sort()).toEqual([
      'DATABASE_URL',
      'PARLEY_ENCRYPTION_KEY',
      'PARLEY_JWT_SECRET',
      'PARLEY_METRICS_TOKEN',
      'PARLEY_SMTP_URL',
    ]);
    for (const [name, value] of Object.entries(placeholders)) {
      // Each placeholder alone: the secret in question is what fails.
      const { code, report: r, out } = await report(healthyEnv({ [name]: value }), '--timeout', '0.5');
      expect(code, name).toBe(1);
      const secrets = check(r, 'secrets');
      expect(secrets.status, name).toBe('fail');
      expect(secrets.detail, name).toContain(`${name} is still the example's placeholder`);
      expect(out, name).not.toMatch(/change-me/);
    }

    const file = path.join(h.dataDir, 'jwt-secret');
    fs.writeFileSync(file, `${crypto.randomBytes(48).toString('base64url')}\n`, { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    try {
      const r = (await report(healthyEnv({ PARLEY_JWT_SECRET: undefined }))).report;
      expect(check(r, 'secrets').detail).toContain(`${file} is readable by other users (mode 644)`);
      expect(check(r, 'secrets').fix).toBe(`chmod 600 ${file}`);
      fs.chmodSync(file, 0o600);
      expect(check((await report(healthyEnv({ PARLEY_JWT_SECRET: undefined }))).report, 'secrets').status).toBe('pass');
    } finally {
      fs.rmSync(file);
    }
  });

  it('never prints a secret: only whether each is set', async () => {
    const metrics = `metrics-${crypto.randomBytes(12).toString('hex')}`;
    const smtpPass = `smtp-${crypto.randomBytes(12).toString('hex')}`;
    const env = healthyEnv({ PARLEY_METRICS_TOKEN: metrics, PARLEY_SMTP_URL: `smtp://mailer:${smtpPass}@127.0.0.1:${closedPort}` });
    for (const args of [[], ['--json']]) {
      const run = await doctor(env, ...args);
      for (const secret of [JWT_SECRET, ENCRYPTION_KEY, metrics, smtpPass]) expect(run.out + run.err).not.toContain(secret);
      expect(run.out).toContain('metrics token: set (PARLEY_METRICS_TOKEN)');
    }
  });

  it('a public URL that is http, unset, another installation, or not answering (skipped, and said so)', async () => {
    const http = check((await report(healthyEnv({ PARLEY_PUBLIC_URL: 'http://parley.example.com' }))).report, 'public-url');
    expect(http).toMatchObject({
      status: 'fail',
      detail: 'http://parley.example.com is not https: the providers send webhooks only to https addresses',
    });
    expect(http.fix).toContain('PARLEY_PUBLIC_URL=https://');

    const example = check((await report(healthyEnv({ PARLEY_PUBLIC_URL: 'https://parley.example.com' }))).report, 'public-url');
    expect(example).toMatchObject({ status: 'fail', detail: "https://parley.example.com is still the example's address" });

    const unset = await report(healthyEnv({ PARLEY_PUBLIC_URL: undefined }));
    expect(unset.code).toBe(1);
    expect(check(unset.report, 'public-url').detail).toContain('PARLEY_PUBLIC_URL is not set');

    const other = check((await report(healthyEnv({ PARLEY_PUBLIC_URL: impostorUrl }))).report, 'public-url');
    expect(other.status).toBe('fail');
    expect(other.detail).toContain(`answers as another Parley installation`);
    expect(other.detail).toContain(`this one is ${await installationId(h.database.db.kysely)}`);

    const run = await doctor(healthyEnv({ PARLEY_PUBLIC_URL: `https://127.0.0.1:${silentPort}` }), '--json', '--timeout', '0.5');
    expect(run.ms).toBeLessThan(3000);
    expect(run.code).toBe(0);
    const quiet = check(JSON.parse(run.out) as Report, 'public-url');
    expect(quiet.status).toBe('skip');
    expect(quiet.detail).toContain('not reachable from this machine (no answer in 500 ms); check from outside');
  });

  it('an SMTP server that refuses or never answers, within the timeout', async () => {
    for (const port of [closedPort, silentPort]) {
      const run = await doctor(healthyEnv({ PARLEY_SMTP_URL: `smtp://127.0.0.1:${port}` }), '--json', '--timeout', '0.5');
      expect(run.code).toBe(1);
      expect(run.ms).toBeLessThan(3000);
      const smtpCheck = check(JSON.parse(run.out) as Report, 'smtp');
      expect(smtpCheck.status).toBe('fail');
      expect(smtpCheck.detail).toMatch(new RegExp(`^smtp://127\\.0\\.0\\.1:${port}: .+`));
      expect(smtpCheck.fix).toContain('check PARLEY_SMTP_URL');
    }
    const unset = check((await report(healthyEnv({ PARLEY_SMTP_URL: undefined }))).report, 'smtp');
    expect(unset).toMatchObject({ status: 'skip', detail: 'PARLEY_SMTP_URL is not set: invitation e-mails are written to the log' });
  });

  it('an integration that lost its credentials and a failing webhook endpoint, with the last attempt', async () => {
    const owner = await h.signUp();
    const db = h.database.db.kysely;
    const now = Date.now();
    const refused = 'Viber refused the bot token (status 2: invalidAuthToken): copy the token again from the Viber Admin Panel.';
    const integration = await db
      .insertInto('integrations')
      .values({
        account_id: owner.accountId,
        type: 'msgrc_bot',
        status: 'auth failure',
        created_at: now,
        last_error_at: now,
        last_error: refused,
        last_error_code: 'credentials_refused',
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    // Active, but its webhook was refused at the last reconnect: unhealthy too. A refused message is not.
    const webhookLost =
      "Telegram refused Parley's webhook address (400 Bad Request: bad webhook): check that PARLEY_PUBLIC_URL is a public https address, then re-register the webhook.";
    const [active, blocked] = await db
      .insertInto('integrations')
      .values([
        {
          account_id: owner.accountId,
          type: 'msgrb_bot',
          created_at: now,
          last_error_at: now,
          last_error: webhookLost,
          last_error_code: 'webhook_refused',
        },
        {
          account_id: owner.accountId,
          type: 'msgrb_bot',
          created_at: now,
          last_error_at: now,
          last_error: 'Telegram refused a message (403 Forbidden: bot was blocked by the user).',
          last_error_code: 'send_refused',
        },
      ])
      .returning('id')
      .execute();
    const hook = await db
      .insertInto('webhooks')
      .values({
        account_id: owner.accountId,
        url: 'https://crm.example.com/hook?token=do-not-print',
        secret: 'whsec_x',
        api_version: 'v1.3',
        failing_since: now - 3_600_000,
        created_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const event = await db
      .insertInto('events')
      .values({ account_id: owner.accountId, type: 'lead.created', lead_id: null, payload: '{}', created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    await db
      .insertInto('deliveries')
      .values({
        webhook_id: hook.id,
        event_id: event.id,
        message_id: `msg_${crypto.randomUUID()}`,
        lead_id: null,
        attempts: 2,
        next_attempt_at: now + 60_000,
        lease_until: null,
        leased_by: null,
        last_status_code: 502,
        last_error: 'HTTP 502',
        created_at: now,
        delivered_at: null,
      })
      .execute();
    try {
      const { code, report: r, out } = await report(healthyEnv());
      expect(code).toBe(1);
      const integrations = check(r, 'integrations');
      expect(integrations.status).toBe('fail');
      expect(integrations.detail).toContain(
        `integration ${integration.id} (account ${owner.accountId}, msgrc_bot): auth failure, last error: ${refused}`,
      );
      expect(integrations.detail).toContain(
        `integration ${active!.id} (account ${owner.accountId}, msgrb_bot): active, last error: ${webhookLost}`,
      );
      expect(integrations.detail).not.toContain(`integration ${blocked!.id} `);
      expect(integrations.fix).toContain('updates the credentials or reconnects');
      const webhooks = check(r, 'webhooks');
      expect(webhooks.status).toBe('fail');
      expect(webhooks.detail).toBe(
        `webhook ${hook.id} (account ${owner.accountId}, crm.example.com): failing since ${new Date(now - 3_600_000).toISOString()}, last attempt answered 502`,
      );
      expect(out).not.toContain('do-not-print');
    } finally {
      await db.deleteFrom('deliveries').where('webhook_id', '=', hook.id).execute();
      await db.deleteFrom('webhooks').where('id', '=', hook.id).execute();
      await db.deleteFrom('integrations').where('id', 'in', [integration.id, active!.id, blocked!.id]).execute();
    }
  });

  it('refuses a bad --timeout without checking anything', async () => {
    for (const value of ['0', '-1', 'soon', '1e9']) {
      const run = await doctor(healthyEnv(), `--timeout=${value}`);
      expect(run.code, value).toBe(1);
      expect(run.err).toBe('parley: --timeout must be a number of seconds above 0, at most 60');
      expect(run.out).toBe('');
    }
  });
});
