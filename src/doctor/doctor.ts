import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { openReadOnlyDatabase } from '../db/read-only.js';
import { VERSION } from '../version.js';
import { fail, reason, skip, type CheckResult } from './check.js';
import {
  checkClock,
  checkDatabase,
  checkIntegrations,
  checkWebhooks,
  databaseLabel,
  databaseUnreachable,
  readInstallationId,
} from './database-checks.js';
import { checkDataFolder, checkNode, checkSecrets } from './host-checks.js';
import { checkPublicUrl, checkSmtp } from './network-checks.js';

export const DOCTOR_USAGE = `  doctor [--json] [--timeout <seconds>]
                              check this installation (Node.js, data folder and disk, database and
                              migrations, secrets, public URL, SMTP, integrations, webhooks, clock),
                              each failure with its fix; changes nothing; exit 1 when one fails
`;

export interface DoctorReport {
  ok: boolean;
  version: string;
  database: string | undefined;
  checks: CheckResult[];
}

/**
 * Checks the installation that `env` configures. Reads only: the database is opened read-only and
 * never migrated, no file or folder is created, and every network check gives up after `timeoutMs`
 * (docs/deploy.md, "Troubleshooting").
 */
export async function runDoctor(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<DoctorReport> {
  const checks: CheckResult[] = [checkNode()];
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    checks.push(
      fail('configuration', 'Configuration', err.message, 'correct that setting in the environment file (/etc/parley/parley.env)'),
    );
    return { ok: false, version: VERSION, database: undefined, checks };
  }
  checks.push(...checkDataFolder(config.dataDir));
  const database = databaseChecks(config, timeoutMs);
  const [fromDatabase, publicUrl, smtp] = await Promise.all([
    database,
    checkPublicUrl(
      config,
      env,
      database.then((d) => d.installation),
      timeoutMs,
    ),
    checkSmtp(config, timeoutMs),
  ]);
  checks.push(...fromDatabase.checks, checkSecrets(env, config), publicUrl, smtp, ...fromDatabase.later);
  return { ok: checks.every((c) => c.status !== 'fail'), version: VERSION, database: databaseLabel(config), checks };
}

/** The database's checks: those printed with it, and the ones read from it printed last. */
async function databaseChecks(
  config: Config,
  timeoutMs: number,
): Promise<{ checks: CheckResult[]; later: CheckResult[]; installation: string | undefined }> {
  const notRead = (name: string, title: string) => skip(name, title, 'not read: the database could not be checked');
  const unread = [notRead('integrations', 'Integrations'), notRead('webhooks', 'Webhook endpoints'), notRead('clock', 'Clock')];
  let db;
  try {
    db = await openReadOnlyDatabase(config, timeoutMs);
  } catch (err) {
    return { checks: [databaseUnreachable(config, err)], later: unread, installation: undefined };
  }
  if (!db) return { checks: [databaseUnreachable(config, undefined)], later: unread, installation: undefined };
  try {
    let checks: CheckResult[];
    try {
      checks = await checkDatabase(db, config);
    } catch (err) {
      return { checks: [databaseUnreachable(config, err)], later: unread, installation: undefined };
    }
    const installation = await readInstallationId(db);
    const later: CheckResult[] = [];
    for (const [check, name, title] of [
      [checkIntegrations, 'integrations', 'Integrations'],
      [checkWebhooks, 'webhooks', 'Webhook endpoints'],
      [checkClock, 'clock', 'Clock'],
    ] as const) {
      try {
        later.push(await check(db));
      } catch (err) {
        later.push(skip(name, title, `not read: ${reason(err)}`));
      }
    }
    return { checks, later, installation };
  } finally {
    await db.close();
  }
}

const MARK = { pass: 'ok  ', fail: 'FAIL', skip: 'skip' } as const;

export function formatReport(report: DoctorReport): string {
  const width = Math.max(...report.checks.map((c) => c.title.length));
  const lines = [`Parley ${report.version} doctor${report.database ? `: ${report.database}` : ''}`];
  for (const c of report.checks) {
    lines.push(`  ${MARK[c.status]}  ${c.title.padEnd(width)}  ${c.detail}`);
    if (c.fix) lines.push(`  ${' '.repeat(4)}  ${' '.repeat(width)}  fix: ${c.fix}`);
  }
  const count = (s: CheckResult['status']) => report.checks.filter((c) => c.status === s).length;
  // Not "N passed, N failed" alone on a line: CI logs read such a line as a test run's summary.
  lines.push(`${count('pass')} of ${report.checks.length} checks passed; ${count('fail')} failed; ${count('skip')} skipped`);
  return lines.join('\n');
}

/** `parley doctor`: prints the report (text, or JSON with --json); 0 when nothing failed. */
export async function runDoctorCli(args: string[], env: NodeJS.ProcessEnv, out: Pick<Console, 'log' | 'error'>): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { json: { type: 'boolean' }, timeout: { type: 'string' } } }));
  } catch (err) {
    out.error(`parley: ${reason(err)}`);
    return 1;
  }
  const seconds = values.timeout === undefined ? 3 : Number(values.timeout);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 60) {
    out.error('parley: --timeout must be a number of seconds above 0, at most 60');
    return 1;
  }
  const report = await runDoctor(env, seconds * 1000);
  out.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report));
  return report.ok ? 0 : 1;
}
