import type { Insertable } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { FileRow, FilesTable, SourceRow } from '../../db/schema.js';

/** SQL of uploaded files. No rules here. */

export async function insertFile(db: Executor, row: Insertable<FilesTable>): Promise<void> {
  await db.insertInto('files').values(row).execute();
}

/** A file by its unguessable id, whatever the account (the public file URL). */
export async function findFileById(db: Executor, id: string): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findFileOfAccount(db: Executor, accountId: number, id: string): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll().where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
}

export async function findFileByNum(db: Executor, accountId: number, num: number): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll().where('account_id', '=', accountId).where('num', '=', num).executeTakeFirst();
}

export async function deleteFileRow(db: Executor, accountId: number, id: string): Promise<void> {
  await db.deleteFrom('files').where('id', '=', id).where('account_id', '=', accountId).execute();
}

/**
 * A channel of the account by realId or by its own id string, on a live integration among
 * `integrationIds`; the oldest when an id string names several.
 */
export async function findChannelForUpload(
  db: Executor,
  accountId: number,
  key: { realId: number } | { externalId: string },
  integrationIds: 'all' | number[],
): Promise<(Pick<SourceRow, 'id' | 'integration_id'> & { integration_type: string }) | undefined> {
  if (integrationIds !== 'all' && integrationIds.length === 0) return undefined;
  let query = db
    .selectFrom('sources')
    .innerJoin('integrations', 'integrations.id', 'sources.integration_id')
    .select(['sources.id', 'sources.integration_id', 'integrations.type as integration_type'])
    .where('sources.account_id', '=', accountId)
    .where('integrations.deleted_at', 'is', null);
  query = 'realId' in key ? query.where('sources.id', '=', key.realId) : query.where('sources.external_id', '=', key.externalId);
  if (integrationIds !== 'all') query = query.where('sources.integration_id', 'in', integrationIds);
  return query.orderBy('sources.id').limit(1).executeTakeFirst();
}
