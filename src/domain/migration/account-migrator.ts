import type { Services } from '../../services.js';
import { insertAccount } from '../accounts/accounts.repo.js';
import { planFromDefault } from '../accounts/plan.js';
import { AppError } from '../errors.js';
import { copyHistories } from './history-copier.js';
import { copyCustomers, copyLeads, readLeads } from './lead-copier.js';
import { IdBook, emptyReport, type MigrationContext, type MigrationReport, type PhaseProgress } from './migration-context.js';
import * as repo from './migration.repo.js';
import {
  copyEmployees,
  copyIntegrations,
  copyPaymentTypes,
  copyStatuses,
  copyTags,
  copyTemplates,
  listWebhooks,
  sourceList,
} from './reference-copier.js';
import { InterruptedError, SourceClient, SourceError, type SourceClientOptions } from './source-client.js';
import { idOf, readEmployee } from './source-records.js';

export interface MigrateOptions {
  from: string;
  token: string;
  refreshToken?: string;
  /** The source account expected behind the token (a check). */
  sourceAccount?: string;
  /** The account here to copy into when its owner's login is already taken. */
  into?: number;
  /** Only leads whose last message is at or after this instant (Unix ms). */
  since?: number;
  dryRun: boolean;
  rate: number;
  concurrency: number;
  timeoutMs?: number;
  retries?: number;
  /** Largest answer read from the source, in bytes. */
  maxBody?: number;
  sleep?: SourceClientOptions['sleep'];
  signal?: AbortSignal;
}

/** A run refused before anything was written. */
const refused = (message: string) => new AppError(400, 'migration_refused', message);

/** The source's base URL as given (`https://x.example/` or with a version path), reduced to its base. */
export function sourceBase(from: string): string {
  let url: URL;
  try {
    url = new URL(from);
  } catch {
    throw refused(`--from ${from} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw refused('--from must be an http or https URL');
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1\.[123]$/, '');
  return `${url.origin}${path}`;
}

/**
 * Copies one account of a server that speaks this API into an account here (docs/migrate.md):
 * reference data, employees and integrations, then customers and leads, then histories and
 * attachments. Every copied record is mapped in `migration_ids`, so a later run continues where
 * this one stopped and copies only what is new. A dry run reads everything and writes nothing.
 */
export async function migrateAccount(services: Services, opts: MigrateOptions, progress: PhaseProgress): Promise<MigrationReport> {
  const base = sourceBase(opts.from);
  const { db, config, clock } = services.deps;
  const kysely = db.kysely;
  const client = new SourceClient({
    base,
    token: opts.token,
    refreshToken: opts.refreshToken,
    rate: opts.rate,
    concurrency: opts.concurrency,
    timeoutMs: opts.timeoutMs ?? 30_000,
    retries: opts.retries ?? 6,
    maxBody: opts.maxBody ?? 16 * 1024 * 1024,
    sleep: opts.sleep,
    signal: opts.signal,
  });
  const sourceAccountId = await checkSource(client, opts.sourceAccount);
  const report = emptyReport();

  const run = await repo.findRun(kysely, base, sourceAccountId);
  let accountId: number | undefined = run?.account_id;
  if (run && opts.into !== undefined && opts.into !== run.account_id)
    throw refused(`account ${sourceAccountId} of ${base} was copied into account ${run.account_id} here, not ${opts.into}`);
  const owner = (await sourceList(client, '/managers')).map((e) => safe(() => readEmployee(e))).find((e) => e?.role === 'owner');
  if (accountId === undefined && opts.into !== undefined) {
    const account = await kysely.selectFrom('accounts').select('id').where('id', '=', opts.into).executeTakeFirst();
    if (!account) throw refused(`--into ${opts.into}: no such account here`);
    accountId = opts.into;
  }
  if (accountId === undefined) {
    if (!owner) throw refused('the source lists no owner among its employees (GET /v1.3/managers)');
    const taken = (await repo.usersByLogin(kysely, [owner.login]))[0];
    if (taken)
      throw refused(
        `an account here already has the login ${owner.login} (account ${taken.account_id}): name it with --into ${taken.account_id}`,
      );
  }
  const accountName = owner?.name || owner?.login || `Account ${sourceAccountId}`;
  if (!opts.dryRun) {
    if (accountId === undefined) {
      const now = clock.now();
      accountId = (await insertAccount(kysely, accountName, planFromDefault(config.defaultPlan, now), now)).id;
    }
    if (!run)
      await repo.insertRun(kysely, { source: base, source_account_id: sourceAccountId, account_id: accountId, created_at: clock.now() });
  }
  report.accountId = accountId;

  const ctx: MigrationContext = {
    db: kysely,
    client,
    files: services.files,
    accountId: accountId ?? 0,
    ids: accountId === undefined ? new IdBook(0) : await IdBook.load(kysely, accountId),
    dryRun: opts.dryRun,
    since: opts.since,
    concurrency: opts.concurrency,
    fileSource: {
      origin: new URL(base).origin,
      token: () => client.currentToken(),
      allowPrivate: config.webhookAllowPrivate,
      timeoutMs: 60_000,
      unresolved: new Set(),
    },
    report,
    progress,
    signal: opts.signal,
    now: () => clock.now(),
  };
  try {
    await copyIntegrations(ctx);
    await copyEmployees(ctx, { mailer: services.mailer, config, accountName });
    const statusTypes = await copyStatuses(ctx);
    const tags = await copyTags(ctx);
    await copyPaymentTypes(ctx);
    await copyTemplates(ctx);
    await listWebhooks(ctx);
    const leads = await readLeads(ctx);
    if (!ctx.signal?.aborted) await copyCustomers(ctx, leads);
    if (!ctx.signal?.aborted) await copyLeads(ctx, leads, statusTypes, tags);
    if (!ctx.signal?.aborted) await copyHistories(ctx, leads);
  } catch (err) {
    // SIGINT: what committed stays mapped; the report says the run stopped.
    if (!(err instanceof InterruptedError)) throw err;
  }
  const { byKind, retries, rateLimited } = client.stats;
  report.requests = { byKind: { ...byKind }, retries, rateLimited };
  report.interrupted = Boolean(ctx.signal?.aborted);
  if (!opts.dryRun && !report.interrupted) await repo.finishRun(kysely, base, sourceAccountId, clock.now());
  return report;
}

/** The source's account id; a clear refusal when the URL is not this API or the token is refused. */
async function checkSource(client: SourceClient, expected: string | undefined): Promise<string> {
  let answer;
  try {
    answer = await client.request('GET', '/v1.3/account/me');
  } catch (err) {
    if (err instanceof SourceError) throw refused(`the source cannot be read: ${err.message}`);
    throw refused(`the source cannot be reached: ${(err as Error).message}`);
  }
  if (answer.status === 401 || answer.status === 403)
    throw refused(`the source refused the token (${answer.status}): give an API key or an owner's access token of the source account`);
  if (answer.status === 404)
    throw refused(
      `${client.base} does not serve the v1.3 API (GET /v1.3/account/me answered 404): is --from the base URL of a server speaking this API?`,
    );
  const account = (answer.body as { account?: { id?: unknown } } | undefined)?.account;
  const id = idOf(account?.id);
  if (answer.status !== 200 || id === undefined)
    throw refused(`${client.base} is not a server speaking this API (GET /v1.3/account/me answered ${answer.status} without an account)`);
  if (expected !== undefined && expected !== id) throw refused(`the token belongs to account ${id} of the source, not ${expected}`);
  return id;
}

function safe<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
