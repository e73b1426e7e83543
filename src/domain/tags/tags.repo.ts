import { sql } from 'kysely';
import type { Executor } from '../../db/database.js';
import { tagKey, type TagRow } from './tags.types.js';

/** Tags of the account whose lower-cased value starts with `prefix` (already lower-cased); all without one. */
export async function searchTags(db: Executor, accountId: number, prefix?: string): Promise<TagRow[]> {
  let query = db.selectFrom('tags').selectAll().where('account_id', '=', accountId);
  if (prefix) {
    const pattern = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where(sql<boolean>`${sql.ref('tag_key')} like ${pattern} escape '\\'`);
  }
  return query.execute();
}

/**
 * The account's tag with exactly this value, created when it does not exist yet (tags are created on
 * first use, docs/api/leads.md). Safe against a concurrent creation of the same tag. Call it inside the
 * transaction that attaches the tag to a lead.
 */
export async function ensureTag(trx: Executor, accountId: number, tag: string, now: number): Promise<TagRow> {
  const existing = await findTag(trx, accountId, tag);
  if (existing) return existing;
  await trx
    .insertInto('tags')
    .values({ account_id: accountId, tag, tag_key: tagKey(tag), created_at: now })
    .onConflict((oc) => oc.columns(['account_id', 'tag']).doNothing())
    .execute();
  const row = await findTag(trx, accountId, tag);
  if (!row) throw new Error(`tag "${tag}" vanished while being created`);
  return row;
}

export async function findTag(db: Executor, accountId: number, tag: string): Promise<TagRow | undefined> {
  return db.selectFrom('tags').selectAll().where('account_id', '=', accountId).where('tag', '=', tag).executeTakeFirst();
}

/** The account's tags with exactly these values (those that exist), in one statement. */
export async function findTags(db: Executor, accountId: number, tags: string[]): Promise<TagRow[]> {
  if (!tags.length) return [];
  return db.selectFrom('tags').selectAll().where('account_id', '=', accountId).where('tag', 'in', tags).execute();
}
