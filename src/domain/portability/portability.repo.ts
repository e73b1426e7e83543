import { sql } from 'kysely';
import { dialectOf, type Executor } from '../../db/database.js';
import type { ArchiveRecord, SectionSpec, TableName } from './archive-format.js';

/** SQL of account export and import: pages of a section's rows, and bulk inserts. No rules here. */

/** The highest id of the account's rows in a section's table (the export's upper bound). */
export async function maxId(db: Executor, spec: SectionSpec, accountId: number): Promise<number> {
  if (!spec.hasId || spec.table === 'files') return 0;
  const row = await sql<{ m: number | null }>`select max(id) as m from ${sql.table(spec.table)} where account_id = ${accountId}`.execute(
    db,
  );
  return Number(row.rows[0]?.m ?? 0);
}

export async function countRows(db: Executor, spec: SectionSpec, accountId: number, bound: number): Promise<number> {
  const bounded = spec.hasId && spec.table !== 'files' ? sql`and id <= ${bound}` : sql``;
  const row = await sql<{
    n: number;
  }>`select count(*) as n from ${sql.table(spec.table)} where account_id = ${accountId} ${bounded}`.execute(db);
  return Number(row.rows[0]?.n ?? 0);
}

/** Where a page starts: after this id, or after this (lead, tag) pair for lead_tags. */
export type PageKey = { id: number | string } | { lead_id: number; tag_id: number } | undefined;

/** The next page of a section's rows, in key order, no newer than `bound` (integer ids). */
export async function readPage(
  db: Executor,
  spec: SectionSpec,
  accountId: number,
  after: PageKey,
  bound: number,
  limit: number,
): Promise<ArchiveRecord[]> {
  const columns = spec.hasId ? ['id', ...spec.columns] : spec.columns;
  const list = sql.join(columns.map((c) => sql.ref(c)));
  // SQLite: `+account_id` keeps the planner on the primary key's range (with an index on
  // account_id it read every row of the account for each page and sorted them: quadratic).
  let where = dialectOf(db) === 'sqlite' ? sql`+account_id = ${accountId}` : sql`account_id = ${accountId}`;
  let order = sql`id`;
  if (!spec.hasId) {
    order = sql`lead_id, tag_id`;
    // A row value: one range of the (lead_id, tag_id) key, where an OR made SQLite scan the table.
    if (after && 'lead_id' in after) where = sql`${where} and (lead_id, tag_id) > (${after.lead_id}, ${after.tag_id})`;
  } else {
    if (after && 'id' in after) where = sql`${where} and id > ${after.id}`;
    if (spec.table !== 'files') where = sql`${where} and id <= ${bound}`;
  }
  const result =
    await sql<ArchiveRecord>`select ${list} from ${sql.table(spec.table)} where ${where} order by ${order} limit ${sql.lit(limit)}`.execute(
      db,
    );
  return result.rows;
}

export async function findAccount(db: Executor, accountId: number) {
  return db.selectFrom('accounts').selectAll().where('id', '=', accountId).executeTakeFirst();
}

/**
 * `n` fresh ids of a table, ascending. PostgreSQL takes them from the identity sequence (other
 * writers keep theirs); SQLite, whose writers are serialized and which runs the import in one write
 * transaction, counts on from the highest rowid.
 */
export async function allocateIds(
  db: Executor,
  dialect: 'sqlite' | 'postgres',
  table: TableName,
  n: number,
  next: Map<string, number>,
): Promise<number[]> {
  if (dialect === 'postgres') {
    const rows = await sql<{
      id: number;
    }>`select nextval(pg_get_serial_sequence(${table}, 'id')) as id from generate_series(1, ${sql.lit(n)})`.execute(db);
    return rows.rows.map((r) => Number(r.id)).sort((a, b) => a - b);
  }
  const start = next.get(table) ?? (await firstFreeSqliteId(db, table));
  next.set(table, start + n);
  return Array.from({ length: n }, (_, i) => start + i);
}

async function firstFreeSqliteId(db: Executor, table: string): Promise<number> {
  const row = await sql<{ m: number | null }>`select max(id) as m from ${sql.table(table)}`.execute(db);
  // AUTOINCREMENT never reuses an id, even of a deleted last row: continue after its record too.
  const seq = await sql<{ seq: number }>`select seq from sqlite_sequence where name = ${table}`.execute(db);
  return Math.max(Number(row.rows[0]?.m ?? 0), Number(seq.rows[0]?.seq ?? 0)) + 1;
}

export async function insertRows(db: Executor, table: TableName, rows: Record<string, unknown>[]): Promise<void> {
  if (!rows.length) return;
  // Parameters per statement stay under SQLite's and PostgreSQL's limits (32766 / 65535).
  const width = Object.keys(rows[0]).length;
  const chunk = Math.max(1, Math.floor(30000 / width));
  for (let i = 0; i < rows.length; i += chunk) {
    await db
      .insertInto(table)
      .values(rows.slice(i, i + chunk) as never)
      .execute();
  }
}

/** Sets leads' last_message_id, `pairs` being [leadId, messageId, ...], in statements of 500 leads. */
export async function setLastMessages(db: Executor, pairs: number[]): Promise<void> {
  for (let i = 0; i < pairs.length; i += 1000) {
    const slice = pairs.slice(i, i + 1000);
    const cases: ReturnType<typeof sql>[] = [];
    const ids: number[] = [];
    for (let j = 0; j < slice.length; j += 2) {
      cases.push(sql`when ${sql.lit(slice[j])} then ${sql.lit(slice[j + 1])}`);
      ids.push(slice[j]);
    }
    await sql`update leads set last_message_id = case id ${sql.join(cases, sql` `)} end where id in (${sql.join(ids)})`.execute(db);
  }
}

export async function findImport(db: Executor, exportId: string) {
  return db.selectFrom('account_imports').selectAll().where('export_id', '=', exportId).executeTakeFirst();
}

export async function insertImport(
  db: Executor,
  row: { export_id: string; account_id: number; report: string; created_at: number },
): Promise<void> {
  await db.insertInto('account_imports').values(row).execute();
}

export async function insertAccount(db: Executor, row: { name: string; plan: string; created_at: number }): Promise<number> {
  const r = await db.insertInto('accounts').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(r.id);
}

export async function loginsTaken(db: Executor, logins: string[]): Promise<string[]> {
  if (!logins.length) return [];
  const rows = await db.selectFrom('users').select('login').where('login', 'in', logins).execute();
  return rows.map((r) => r.login);
}

export async function fileStorageKey(db: Executor, accountId: number, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('files')
    .select('storage_key')
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row?.storage_key;
}
