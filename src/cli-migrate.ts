import { parseArgs } from 'node:util';
import type { Services } from './services.js';
import { CliError, integer, required, type CliOutput } from './cli-kit.js';
import { progressReporter, type ProgressReporter } from './cli-progress.js';
import { migrateAccount, type MigrateOptions } from './domain/migration/account-migrator.js';
import type { MigrationReport } from './domain/migration/migration-context.js';
import { SourceError } from './domain/migration/source-client.js';

/** `parley migrate` (docs/migrate.md): copies an account of any server speaking this API into this installation. */
export const MIGRATE_USAGE = `  migrate --from <base URL> --token <token> [--refresh-token <token>] [--account <id>]
          [--into <accountId>] [--since <ISO date>] [--rate <requests/s>] [--concurrency <n>] [--dry-run]
                              copy an account of a server speaking this API (docs/migrate.md);
                              run it again to copy what is new; --dry-run reads and counts only
`;

const DEFAULT_RATE = 100;
const DEFAULT_CONCURRENCY = 8;

export async function runMigrate(services: Services, args: string[], out: CliOutput): Promise<string> {
  const { values } = parseArgs({
    args,
    options: {
      from: { type: 'string' },
      token: { type: 'string' },
      'refresh-token': { type: 'string' },
      account: { type: 'string' },
      into: { type: 'string' },
      since: { type: 'string' },
      rate: { type: 'string' },
      concurrency: { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
  });
  const opts: MigrateOptions = {
    from: required(values, 'from'),
    token: required(values, 'token'),
    refreshToken: values['refresh-token'],
    sourceAccount: values.account,
    dryRun: values['dry-run'] === true,
    rate: values.rate === undefined ? DEFAULT_RATE : positive('rate', values.rate, 1000),
    concurrency: values.concurrency === undefined ? DEFAULT_CONCURRENCY : positive('concurrency', values.concurrency, 64),
  };
  if (values.into !== undefined) opts.into = integer('into', values.into);
  if (values.since !== undefined) {
    const ms = Date.parse(values.since);
    if (Number.isNaN(ms)) throw new CliError('--since must be an ISO 8601 date');
    opts.since = ms;
  }
  // SIGINT ends the run cleanly: requests in flight are dropped, what is committed stays mapped.
  const stop = new AbortController();
  const onSigint = () => {
    out.error('parley migrate: interrupted; run the same command again to continue');
    stop.abort();
  };
  process.once('SIGINT', onSigint);
  opts.signal = stop.signal;
  let bar: { phase: string; reporter: ProgressReporter } | undefined;
  const started = performance.now();
  let report: MigrationReport;
  try {
    report = await migrateAccount(services, opts, (phase, done, total) => {
      if (bar?.phase !== phase) {
        bar?.reporter.end();
        bar = { phase, reporter: progressReporter(phase, process.stderr, (line) => out.error(line), Date.now, true) };
      }
      bar.reporter.update(done, total);
    });
  } catch (err) {
    if (err instanceof SourceError) throw new CliError(`${err.message}; what was copied stays: run the same command again to continue`);
    throw err;
  } finally {
    bar?.reporter.end();
    process.off('SIGINT', onSigint);
  }
  return summary(report, opts.dryRun, (performance.now() - started) / 1000);
}

function positive(name: string, v: string, max: number): number {
  const n = integer(name, v);
  if (n < 1 || n > max) throw new CliError(`--${name} must be between 1 and ${max}`);
  return n;
}

/** The run's cost (docs/migrate.md "How long it takes"): requests per kind, over `--rate`. */
function requestLine(r: MigrationReport): string {
  const { byKind, retries, rateLimited } = r.requests;
  const total = Object.values(byKind).reduce((a, b) => a + b, 0);
  const kinds = Object.entries(byKind)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `requests: ${total} (${kinds || 'none'}; ${retries} retried, ${rateLimited} answered 429); attachment downloads ${r.downloads}`;
}

function summary(r: MigrationReport, dryRun: boolean, seconds: number): string {
  const counts = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ') || 'nothing';
  const lines = [
    dryRun
      ? `dry run: nothing was written; would copy ${counts(r.copied)}`
      : `${r.interrupted ? 'interrupted' : 'migrated'} into account ${r.accountId} in ${seconds.toFixed(1)} s: copied ${counts(r.copied)}`,
    `already here: ${counts(r.unchanged)}`,
    requestLine(r),
  ];
  if (r.skipped.length) {
    lines.push(`not copied (${r.skipped.length}):`);
    for (const s of r.skipped.slice(0, 200)) lines.push(`  ${s.kind} ${s.id}: ${s.reason}`);
    if (r.skipped.length > 200) lines.push(`  ... and ${r.skipped.length - 200} more`);
  }
  if (r.webhooks.length) lines.push(`webhooks to register again here (their secrets cannot be copied): ${r.webhooks.join(', ')}`);
  if (r.invitationsNotSent.length) lines.push(`invitations that could not be e-mailed: ${r.invitationsNotSent.join(', ')}`);
  if (!dryRun && !r.interrupted) lines.push('integrations are disconnected: give each its credentials again (docs/migrate.md)');
  if (r.interrupted) lines.push('run the same command again to continue');
  return lines.join('\n');
}
