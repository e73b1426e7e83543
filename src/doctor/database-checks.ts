import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { Db, Executor } from '../db/database.js';
import { MIGRATION_NAMES } from '../db/migrate.js';
import { sqliteFile } from '../db/read-only.js';
import { installationId } from '../domain/installation/installation.repo.js';
import { fail, pass, reason, redactUrl, skip, type CheckResult } from './check.js';

/** Older PostgreSQL releases no longer get fixes from the PostgreSQL project. */
const MIN_POSTGRES_MAJOR = 14;
/** Beyond this, timestamps written by Parley and by the database disagree visibly (leases, ordering). */
const MAX_CLOCK_SKEW_MS = 2000;
/** Failing integrations and webhooks named one by one; the rest are counted. */
const LISTED = 10;

const START_FIX = 'start Parley (systemctl restart parley): migrations run at every start';

/** Where the configured database is, for display (no password). */
export function databaseLabel(config: Config): string {
  return config.databaseUrl ? `PostgreSQL ${redactUrl(config.databaseUrl)}` : `SQLite ${sqliteFile(config.dataDir)}`;
}

export function databaseUnreachable(config: Config, err: unknown): CheckResult {
  if (!config.databaseUrl) {
    return fail(
      'database',
      'Database',
      `no database at ${sqliteFile(config.dataDir)}${err ? `: ${reason(err)}` : ''}`,
      'start Parley once (it creates and migrates the database), or point PARLEY_DATA_DIR at the data folder that holds parley.db',
    );
  }
  return fail(
    'database',
    'Database',
    `cannot reach ${databaseLabel(config)}: ${reason(err)}`,
    'check DATABASE_URL (host, port, database, user, password) and that PostgreSQL runs and accepts this machine (systemctl status postgresql; pg_hba.conf)',
  );
}

/** Reachability and version, then the migrations this build expects. */
export async function checkDatabase(db: Db, config: Config): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  if (db.dialect === 'postgres') {
    const { rows } = await sql<{ v: string; n: string }>`select version() as v, current_setting('server_version_num') as n`.execute(
      db.kysely,
    );
    const major = Math.floor(Number(rows[0]?.n) / 10000);
    const name = /^PostgreSQL \S+/.exec(rows[0]?.v ?? '')?.[0] ?? `PostgreSQL ${major}`;
    results.push(pass('database', 'Database', `${databaseLabel(config)} answers (${name})`));
    results.push(
      major >= MIN_POSTGRES_MAJOR
        ? pass('postgres-version', 'PostgreSQL version', `${name} (needs ${MIN_POSTGRES_MAJOR} or newer)`)
        : fail(
            'postgres-version',
            'PostgreSQL version',
            `${name} is older than ${MIN_POSTGRES_MAJOR}`,
            `upgrade PostgreSQL to ${MIN_POSTGRES_MAJOR} or newer (pg_upgradecluster on Debian and Ubuntu)`,
          ),
    );
  } else {
    const { rows } = await sql<{ v: string }>`select sqlite_version() as v`.execute(db.kysely);
    results.push(pass('database', 'Database', `${databaseLabel(config)} opens (SQLite ${rows[0]?.v})`));
  }
  results.push(await checkMigrations(db.kysely));
  return results;
}

async function checkMigrations(db: Executor): Promise<CheckResult> {
  const title = 'Migrations';
  let applied: string[];
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    applied = rows.map((r) => r.name);
  } catch {
    return fail('migrations', title, 'not migrated to this build: the database holds no Parley schema yet', START_FIX);
  }
  const known = new Set(MIGRATION_NAMES);
  const unknown = applied.filter((name) => !known.has(name));
  if (unknown.length) {
    return fail(
      'migrations',
      title,
      `the database was migrated by a newer build of Parley (migrations this build does not know: ${unknown.length}, the first ${unknown.sort()[0]})`,
      'run the newer build, or restore the backup taken before the upgrade (docs/deploy.md, "Upgrades")',
    );
  }
  const done = new Set(applied);
  const pending = MIGRATION_NAMES.filter((name) => !done.has(name));
  if (pending.length) {
    return fail(
      'migrations',
      title,
      `not migrated to this build: ${pending.length} of ${MIGRATION_NAMES.length} migrations not applied, the first ${pending[0]}`,
      START_FIX,
    );
  }
  return pass('migrations', title, `all ${MIGRATION_NAMES.length} migrations of this build applied`);
}

/** This installation's id from its database, when it has one yet. */
export function readInstallationId(db: Db): Promise<string | undefined> {
  return installationId(db.kysely).catch(() => undefined);
}

/** The database's clock against this machine's: the midpoint of the round trip against its answer. */
export async function checkClock(db: Db): Promise<CheckResult> {
  const title = 'Clock';
  if (db.dialect === 'sqlite') return skip('clock', title, "SQLite runs inside Parley's process: one clock");
  const before = Date.now();
  const { rows } = await sql<{ ms: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint as ms`.execute(db.kysely);
  const after = Date.now();
  const skew = Number(rows[0]?.ms) - (before + after) / 2;
  const detail = `the database's clock is ${Math.abs(Math.round(skew))} ms ${skew >= 0 ? 'ahead of' : 'behind'} this machine's (round trip ${after - before} ms)`;
  if (Math.abs(skew) <= MAX_CLOCK_SKEW_MS) return pass('clock', title, detail);
  return fail(
    'clock',
    title,
    `${detail}: more than ${MAX_CLOCK_SKEW_MS} ms`,
    'keep both machines synchronized (timedatectl set-ntp true; systemd-timesyncd or chrony)',
  );
}

/** An integration as the doctor reports it. */
interface IntegrationState {
  id: number;
  accountId: number;
  type: string;
  status: string;
  /** The integration's last failure as its owner reads it (docs/api/integrations.md "Health"), where one is kept. */
  lastError?: string;
  lastErrorCode?: string;
}

/** Every integration in use; the one place the doctor reads them. */
async function integrationStates(db: Executor): Promise<IntegrationState[]> {
  const rows = await db
    .selectFrom('integrations')
    .select(['id', 'account_id', 'type', 'status', 'last_error', 'last_error_code'])
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    accountId: Number(r.account_id),
    type: r.type,
    status: r.status,
    ...(r.last_error ? { lastError: r.last_error, lastErrorCode: r.last_error_code ?? '' } : {}),
  }));
}

/** Statuses of an integration that cannot receive or send until someone acts. */
const FAILING_STATUSES = new Set(['auth failure']);
/** Last errors that are one message's, not the integration's (a customer who blocked the bot). */
const MESSAGE_ERRORS = new Set(['send_refused']);

function unhealthy(s: IntegrationState): boolean {
  return FAILING_STATUSES.has(s.status) || (s.lastError !== undefined && !MESSAGE_ERRORS.has(s.lastErrorCode ?? ''));
}

export async function checkIntegrations(db: Db): Promise<CheckResult> {
  const title = 'Integrations';
  const states = await integrationStates(db.kysely);
  if (!states.length) return pass('integrations', title, 'none connected yet');
  const counts = new Map<string, number>();
  for (const s of states) counts.set(s.status, (counts.get(s.status) ?? 0) + 1);
  const summary = `${states.length} connected: ${[...counts].map(([status, n]) => `${n} ${status}`).join(', ')}`;
  const failing = states.filter(unhealthy);
  if (!failing.length) return pass('integrations', title, summary);
  const named = failing
    .slice(0, LISTED)
    .map((s) => `integration ${s.id} (account ${s.accountId}, ${s.type}): ${s.status}${s.lastError ? `, last error: ${s.lastError}` : ''}`);
  if (failing.length > LISTED) named.push(`and ${failing.length - LISTED} more`);
  return fail(
    'integrations',
    title,
    `${summary}; ${named.join('; ')}`,
    "the account's owner does what each last error says, then updates the credentials or reconnects the integration (Settings, Integrations); where no error is named, the provider's refusal is in Parley's log (journalctl -u parley)",
  );
}

/** Webhook endpoints whose deliveries fail, with the last attempt's outcome. */
export async function checkWebhooks(db: Db): Promise<CheckResult> {
  const title = 'Webhook endpoints';
  const failing = await db.kysely
    .selectFrom('webhooks')
    .select(['id', 'account_id', 'url', 'status', 'failing_since'])
    .where('failing_since', 'is not', null)
    .orderBy('id')
    .execute();
  if (!failing.length) return pass('webhooks', title, 'no endpoint is failing');
  const named: string[] = [];
  for (const hook of failing.slice(0, LISTED)) {
    const last = await db.kysely
      .selectFrom('deliveries')
      .select(['last_status_code', 'last_error'])
      .where('webhook_id', '=', hook.id)
      .where('attempts', '>', 0)
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    const outcome = !last
      ? 'no attempt recorded'
      : last.last_status_code
        ? `answered ${last.last_status_code}`
        : (last.last_error?.slice(0, 200) ?? 'no answer');
    const state = Number(hook.status) === 1 ? 'failing' : 'disabled after failing';
    named.push(
      `webhook ${hook.id} (account ${hook.account_id}, ${host(hook.url)}): ${state} since ${new Date(Number(hook.failing_since)).toISOString()}, last attempt ${outcome}`,
    );
  }
  if (failing.length > LISTED) named.push(`and ${failing.length - LISTED} more`);
  return fail(
    'webhooks',
    title,
    named.join('; '),
    "the receiving system must answer 2xx; once mended the account's owner re-enables a disabled endpoint (PUT /v1.3/webhooks/{id} with status 1; docs/api/webhooks.md)",
  );
}

/** Only the host of an endpoint: its path or query may hold a token. */
function host(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid URL';
  }
}
