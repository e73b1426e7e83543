import { sql, Migrator, type Migration, type MigrationProvider } from 'kysely';
import { renameStatements, type Db } from './database.js';
import { migrationKit, type ParleyMigration } from './migrations/helpers.js';
import { applySnapshot } from './schema-snapshot.js';
import type { EarlySchema } from './early-schema.js';
import { foundation } from './migrations/0001-foundation.js';
import { coreModel } from './migrations/0002-core-model.js';
import { files } from './migrations/0006-files.js';
import { search } from './migrations/0010-search.js';
import { writeFirst } from './migrations/0007-write-first.js';
import { employees } from './migrations/0003-employees.js';
import { webhooks } from './migrations/0009-webhooks.js';
import { leads } from './migrations/0008-leads.js';
import { widget } from './migrations/0011-widget.js';
import { bots } from './migrations/0012-bots.js';
import { deliveryClaims } from './migrations/0013-delivery-claims.js';
import { deliveryQueue } from './migrations/0014-delivery-queue.js';
import { searchPrefixes } from './migrations/0015-search-prefixes.js';
import { bridge } from './migrations/0035-bridge.js';
import { writeFirstPosts } from './migrations/0036-write-first-posts.js';
import { tokenGeneration } from './migrations/0045-token-generation.js';
import { pollCursors } from './migrations/0030-poll-cursors.js';
import { channelEvents } from './migrations/0031-channel-events.js';
import { deliveryStatus } from './migrations/0020-delivery-status.js';
import { heldDeliveryStatuses } from './migrations/0021-held-delivery-statuses.js';
import { oauth } from './migrations/0050-oauth.js';
import { devices } from './migrations/0051-devices.js';
import { leadNotes } from './migrations/0055-lead-notes.js';
import { dataOwnership } from './migrations/0060-data-ownership.js';
import { privateReplies } from './migrations/0065-private-replies.js';
import { unloggedRateLimits } from './migrations/0066-unlogged-rate-limits.js';
import { searchWalks } from './migrations/0067-search-walks.js';
import { statementReadVersions } from './migrations/0068-statement-read-versions.js';
import { userChangeNotify } from './migrations/0069-user-change-notify.js';
import { leadWords } from './migrations/0070-lead-words.js';
import { messageWords } from './migrations/0071-message-words.js';
import { ingestConversations } from './migrations/0072-ingest-conversations.js';
import { hotPathKeys } from './migrations/0073-hot-path-keys.js';
import { integrationChangeNotify } from './migrations/0074-integration-change-notify.js';
import { widgetVisitorChangeNotify } from './migrations/0075-widget-visitor-change-notify.js';
import { sendBatch } from './migrations/0076-send-batch.js';
import { messageWordsOnce } from './migrations/0077-message-words-once.js';
import { ingestRowsAsJson } from './migrations/0078-ingest-rows-as-json.js';
import { messageWordsInline } from './migrations/0079-message-words-inline.js';
import { sharedCoordination } from './migrations/0040-shared-coordination.js';
import { fileChunks } from './migrations/0041-file-chunks.js';
import { retention } from './migrations/0042-retention.js';
import { leadReadVersions } from './migrations/0043-lead-read-versions.js';
import { accountTypeNames } from './migrations/0100-account-type-names.js';
import { searchText } from './migrations/0105-search-text.js';
import { phones } from './migrations/0106-phones.js';
import { stemAsWord } from './migrations/0125-stem-as-word.js';
import { integrationHealth } from './migrations/0085-integration-health.js';
import { accountMigrations } from './migrations/0115-account-migrations.js';
import { installation } from './migrations/0120-installation.js';
import { respondedAt } from './migrations/0135-responded-at.js';
import { quietRuns } from './migrations/0140-quiet-runs.js';
import { webhookRound } from './migrations/0145-webhook-round.js';
import { webhookRoundByKey } from './migrations/0165-webhook-round-by-key.js';
import { employeeLocale } from './migrations/0080-employee-locale.js';
import { distribution } from './migrations/0090-distribution.js';
import { accountAutomation } from './migrations/0091-account-automation.js';
import { automationRules } from './migrations/0092-automation-rules.js';

/**
 * The ordered list of migrations. Names sort in the order they run; a migration is never edited
 * once it has landed: add a new one.
 */
const MIGRATIONS: Record<string, ParleyMigration> = {
  '0001-foundation': foundation,
  '0002-core-model': coreModel,
  '0006-files': files,
  '0007-write-first': writeFirst,
  '0010-search': search,
  '0003-employees': employees,
  '0009-webhooks': webhooks,
  '0008-leads': leads,
  '0011-widget': widget,
  '0012-bots': bots,
  '0013-delivery-claims': deliveryClaims,
  '0014-delivery-queue': deliveryQueue,
  '0015-search-prefixes': searchPrefixes,
  '0035-bridge': bridge,
  '0036-write-first-posts': writeFirstPosts,
  '0045-token-generation': tokenGeneration,
  '0030-poll-cursors': pollCursors,
  '0031-channel-events': channelEvents,
  '0020-delivery-status': deliveryStatus,
  '0021-held-delivery-statuses': heldDeliveryStatuses,
  '0050-oauth': oauth,
  '0051-devices': devices,
  '0055-lead-notes': leadNotes,
  '0060-data-ownership': dataOwnership,
  '0065-private-replies': privateReplies,
  '0066-unlogged-rate-limits': unloggedRateLimits,
  '0067-search-walks': searchWalks,
  '0068-statement-read-versions': statementReadVersions,
  '0069-user-change-notify': userChangeNotify,
  '0070-lead-words': leadWords,
  '0071-message-words': messageWords,
  '0072-ingest-conversations': ingestConversations,
  '0073-hot-path-keys': hotPathKeys,
  '0074-integration-change-notify': integrationChangeNotify,
  '0075-widget-visitor-change-notify': widgetVisitorChangeNotify,
  '0076-send-batch': sendBatch,
  '0077-message-words-once': messageWordsOnce,
  '0078-ingest-rows-as-json': ingestRowsAsJson,
  '0079-message-words-inline': messageWordsInline,
  '0080-employee-locale': employeeLocale,
  '0040-shared-coordination': sharedCoordination,
  '0041-file-chunks': fileChunks,
  '0042-retention': retention,
  '0043-lead-read-versions': leadReadVersions,
  '0100-account-type-names': accountTypeNames,
  '0105-search-text': searchText,
  '0106-phones': phones,
  '0085-integration-health': integrationHealth,
  '0090-distribution': distribution,
  '0091-account-automation': accountAutomation,
  '0092-automation-rules': automationRules,
  '0115-account-migrations': accountMigrations,
  '0120-installation': installation,
  '0125-stem-as-word': stemAsWord,
  '0135-responded-at': respondedAt,
  '0140-quiet-runs': quietRuns,
  '0145-webhook-round': webhookRound,
  '0165-webhook-round-by-key': webhookRoundByKey,
};

/** The migration names in the order they run. */
export const MIGRATION_NAMES = Object.keys(MIGRATIONS).sort();

/** The migrations for Kysely's migrator (also what test/schema-snapshot.test.ts records). */
export class StaticProvider implements MigrationProvider {
  constructor(private readonly dialect: Db['dialect']) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const kit = migrationKit(this.dialect);
    return Object.fromEntries(Object.entries(MIGRATIONS).map(([name, m]) => [name, { up: (db) => m.up(db, kit) }]));
  }
}

/**
 * Brings the schema up to date. Safe with several processes on PostgreSQL (Kysely takes a lock).
 * A new database gets the schema snapshot (src/db/schema-snapshot.ts) instead of ~50 migrations:
 * on PostgreSQL `sent` is called once its script is on its way (see `applySnapshot`), or at once
 * when dist/main.js sent it (`early`).
 */
export async function migrateToLatest(db: Db, sent?: () => void, early?: EarlySchema): Promise<void> {
  // A script under way (db/early-schema.ts) was sent to a schema found new under the migration lock.
  if (!early && (await upToDate(db))) return;
  if (await applySnapshot(db, MIGRATION_NAMES, sent, early)) return;
  await migrate(db);
}

/**
 * Whether every migration has run, in one query: the common case at start-up. Kysely's migrator
 * checks with ~8 statements and a transaction holding a lock (docs/performance.md, "Start-up").
 * Anything else (no bookkeeping table yet, a migration missing, PostgreSQL finding the table in
 * another schema of the search path) goes through the migrator.
 */
async function upToDate(db: Db): Promise<boolean> {
  try {
    const { rows } =
      db.dialect === 'postgres'
        ? await sql<{ name: string; here: boolean }>`select m.name, c.relnamespace = to_regnamespace(current_schema())::oid as here
            from kysely_migration m join pg_class c on c.oid = m.tableoid`.execute(db.kysely)
        : await sql<{ name: string; here: boolean }>`select name, 1 as here from kysely_migration`.execute(db.kysely);
    if (!rows.every((r) => r.here)) return false;
    const ran = new Set(rows.map((r) => r.name));
    return ran.size === MIGRATION_NAMES.length && MIGRATION_NAMES.every((n) => ran.has(n));
  } catch {
    return false;
  }
}

/** Runs the migrations up to and including `name`: tests of a migration on data written before it. */
export async function migrateTo(db: Db, name: string): Promise<void> {
  if (!(name in MIGRATIONS)) throw new Error(`Unknown migration ${name}`);
  await migrate(db, name);
}

async function migrate(db: Db, upTo?: string): Promise<void> {
  // Kysely looks for its bookkeeping tables in every schema; name ours so that a database holding
  // several Parley schemas (tests, or installs sharing a server) keeps each one's history apart.
  let migrationTableSchema: string | undefined;
  if (db.dialect === 'postgres') {
    const { rows } = await sql<{ s: string }>`select current_schema() as s`.execute(db.kysely);
    migrationTableSchema = rows[0]?.s;
  }
  const migrator = new Migrator({ db: db.kysely, provider: new StaticProvider(db.dialect), migrationTableSchema });
  const { error, results } = upTo === undefined ? await migrator.migrateToLatest() : await migrator.migrateTo(upTo);
  // Tables may have changed shape under the named statements of this process's connections.
  if (db.dialect === 'postgres' && results?.some((r) => r.status === 'Success')) renameStatements();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    const reason = error instanceof Error ? error.message : String(error ?? '');
    throw new Error(`Migration ${failed?.migrationName ?? ''} failed: ${reason}`);
  }
}
