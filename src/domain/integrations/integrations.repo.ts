import { sql, type Insertable, type Updateable } from 'kysely';
import { lookupsById } from '../../db/batch-queue.js';
import { dialectOf, type Executor } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { IntegrationRow, IntegrationsTable } from '../../db/schema.js';

/** A live (not deleted) integration of the account; another account's id finds nothing. */
const integrationById = prepared((db, p: { accountId: number; integrationId: number }) =>
  db
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', p.integrationId)
    .where('account_id', '=', p.accountId)
    .where('deleted_at', 'is', null),
);

export async function findIntegration(db: Executor, accountId: number, id: number): Promise<IntegrationRow | undefined> {
  return (await integrationById(db, { accountId, integrationId: id }))[0];
}

/** Live integrations of the account, oldest first; `ids` narrows to those (an employee's sources). */
export async function listIntegrations(db: Executor, accountId: number, ids: 'all' | number[]): Promise<IntegrationRow[]> {
  if (ids !== 'all' && ids.length === 0) return [];
  let query = db.selectFrom('integrations').selectAll().where('account_id', '=', accountId).where('deleted_at', 'is', null);
  if (ids !== 'all') query = query.where('id', 'in', ids);
  return query.orderBy('id').execute();
}

export async function insertIntegration(db: Executor, row: Insertable<IntegrationsTable>): Promise<IntegrationRow> {
  return db.insertInto('integrations').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function updateIntegration(
  db: Executor,
  accountId: number,
  id: number,
  patch: Updateable<IntegrationsTable>,
): Promise<IntegrationRow> {
  return db
    .updateTable('integrations')
    .set(patch)
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Removes a row nothing refers to yet (a connection attempt that failed before it was kept). */
export async function deleteIntegrationRow(db: Executor, accountId: number, id: number): Promise<void> {
  await db.deleteFrom('integrations').where('id', '=', id).where('account_id', '=', accountId).execute();
}

/**
 * By id whatever its account: provider webhooks name the integration in their URL, and each
 * delivery (one message, often) starts with this look-up. Prepared (named on PostgreSQL).
 */
const liveIntegrationById = prepared((db, p: { id: number }) =>
  db.selectFrom('integrations').selectAll().where('id', '=', p.id).where('deleted_at', 'is', null),
);
const integrationOfTypeById = prepared((db, p: { id: number; type: string }) =>
  db.selectFrom('integrations').selectAll().where('id', '=', p.id).where('type', '=', p.type),
);
const integrationsByIds = prepared((db, p: { ids: number[] }) =>
  db.selectFrom('integrations').selectAll().where(sql<boolean>`id = any(${p.ids}::bigint[])`),
);

/**
 * PostgreSQL, outside a transaction: the provider webhooks' integration look-ups of one turn of the
 * event loop in one statement instead of one each (docs/performance.md), as the widget's session look-ups are: a WhatsApp delivery was one such statement, its
 * round trip and PostgreSQL's work per statement, for every message. The batch reads the rows by
 * id, deleted ones too, and each caller's condition is checked on the row in memory; the batch
 * starts after its callers asked, so it sees every change committed before. Each caller gets its
 * own copy of the row.
 */
const integrationRowById = lookupsById((db, ids) => integrationsByIds(db, { ids }));

/** A live integration by id whatever its account: provider webhooks name the integration in their URL. */
export async function findLiveIntegrationById(db: Executor, id: number): Promise<IntegrationRow | undefined> {
  if (dialectOf(db) === 'postgres' && !db.isTransaction) {
    const row = await integrationRowById(db, id);
    return row && row.deleted_at === null ? { ...row } : undefined;
  }
  return (await liveIntegrationById(db, { id }))[0];
}

/**
 * PostgreSQL: an integration by id whatever its account and state, batched as above outside a
 * transaction (integration-cache.ts keeps what it finds). The caller gets its own copy.
 */
export async function findIntegrationRowById(db: Executor, id: number): Promise<IntegrationRow | undefined> {
  const row = await integrationRowById(db, id);
  return row && { ...row };
}

/** An integration of the type by id whatever its account, deleted ones included (the webhook URL names it). */
export async function findIntegrationOfType(db: Executor, type: string, id: number): Promise<IntegrationRow | undefined> {
  if (dialectOf(db) === 'postgres' && !db.isTransaction) {
    const row = await integrationRowById(db, id);
    return row && row.type === type ? { ...row } : undefined;
  }
  return (await integrationOfTypeById(db, { id, type }))[0];
}

/** A live integration of the account by type and provider id (a WhatsApp phone number id). */
export function findLiveIntegrationByExternalId(
  db: Executor,
  accountId: number,
  type: string,
  externalId: string,
): Promise<IntegrationRow | undefined> {
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', '=', type)
    .where('external_id', '=', externalId)
    .where('deleted_at', 'is', null)
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/** Marks a live integration deleted; undefined when it was not live (deleted meanwhile). */
export async function markIntegrationDeleted(
  db: Executor,
  accountId: number,
  id: number,
  now: number,
): Promise<IntegrationRow | undefined> {
  return db
    .updateTable('integrations')
    .set({ deleted_at: now })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Live integrations of the account of the given types sharing an external `identifier` (one external account). */
export function liveIntegrationsByIdentifier(
  db: Executor,
  accountId: number,
  types: string[],
  identifier: string,
): Promise<IntegrationRow[]> {
  if (!types.length || !identifier) return Promise.resolve([]);
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('type', 'in', types)
    .where('identifier', '=', identifier)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}
