import { sql, type Expression, type Insertable, type RawBuilder, type SqlBool, type Updateable } from 'kysely';
import { dialectOf, type DialectName, type Executor } from '../../db/database.js';
import { prepared } from '../../db/prepared.js';
import type { LeadRow, LeadsTable } from '../../db/schema.js';
import type { Attachment } from '../channels/channel.js';
import { leadScopeSql, type Scope } from '../policy/policy.js';
import { compareTags } from '../tags/tags.types.js';
import { sourceTypesOf } from './lead-filters.js';
import type { LeadFilters, LeadListEntry, LeadPage, ReadSource, StatusTypeSet } from './leads.types.js';

/**
 * SQL of the leads area. Every query of leads goes through `leadConditions`, which always carries
 * the account and the caller's visibility rule (policy.ts). A page of a list is four queries
 * whatever its size: the page's ids (in index order), their leads joined with customer, integration
 * and last message, the total, and the tags of the page's leads (on PostgreSQL the tags come with the
 * leads: three).
 */

const col = (name: string) => sql.ref(`leads.${name}`);
const inList = (ref: RawBuilder<unknown>, values: readonly (string | number)[]) =>
  values.length ? sql<SqlBool>`${ref} in (${sql.join(values)})` : sql<SqlBool>`1 = 0`;

/** The WHERE clause of a lead query: account, visibility, the list's status types, the filters. */
export function leadConditions(scope: Scope, types: StatusTypeSet, f: LeadFilters): RawBuilder<SqlBool> {
  const accountId = scope.accountId;
  const parts: RawBuilder<unknown>[] = [sql`${col('account_id')} = ${accountId}`];
  if (types !== 'any') {
    if ('only' in types) parts.push(inList(col('status_type'), types.only));
    else parts.push(sql`${col('status_type')} not in (${sql.join(types.except)})`);
  }
  const rule = leadScopeSql(scope);
  if (rule) parts.push(rule);
  if (f.ids) parts.push(inList(col('id'), f.ids));
  if (f.sa) parts.push(inList(col('integration_id'), f.sa));
  if (f.types) {
    parts.push(
      sql`${col('integration_id')} in (select fi.id from integrations fi where fi.account_id = ${accountId} and fi.type in (${sql.join(f.types)}))`,
    );
  }
  if (f.users) parts.push(inList(col('user_id'), f.users));
  if (f.statuses) parts.push(inList(col('status_id'), f.statuses));
  if (f.customer !== undefined) parts.push(sql`${col('customer_id')} = ${f.customer}`);
  if (f.tags) {
    parts.push(sql`exists (select 1 from lead_tags flt where flt.lead_id = ${col('id')} and flt.tag_id in (
      select ft.id from tags ft where ft.account_id = ${accountId} and ft.tag in (${sql.join(f.tags)})))`);
  }
  if (f.sourceKinds) {
    parts.push(sql`exists (select 1 from messages fm inner join sources fs on fs.id = fm.source_id
      where fm.lead_id = ${col('id')} and fs.type in (${sql.join(sourceTypesOf(f.sourceKinds))}))`);
  }
  switch (f.unread) {
    case 'unread':
      parts.push(sql`${col('unread_count')} > 0`);
      break;
    case 'read':
      parts.push(sql`${col('unread_count')} = 0`);
      break;
    case 'unanswered':
      parts.push(sql`${col('last_message_incoming')} = 1`);
      break;
    case 'answered':
      parts.push(sql`${col('last_message_incoming')} = 0`);
      break;
  }
  if (f.lastMessageFrom !== undefined) parts.push(sql`${col('last_message_at')} >= ${f.lastMessageFrom}`);
  if (f.lastMessageTo !== undefined) parts.push(sql`${col('last_message_at')} <= ${f.lastMessageTo}`);
  if (f.createdFrom !== undefined) parts.push(sql`${col('created_at')} >= ${f.createdFrom}`);
  if (f.createdTo !== undefined) parts.push(sql`${col('created_at')} <= ${f.createdTo}`);
  if (f.overdue !== undefined) {
    const overdue =
      f.awaitingCutoff === undefined || f.awaitingCutoff === null
        ? sql<SqlBool>`1 = 0`
        : sql<SqlBool>`(${col('status_type')} in ('inbox', 'active') and ${col('awaiting_since')} is not null and ${col('awaiting_since')} <= ${f.awaitingCutoff})`;
    parts.push(f.overdue ? overdue : sql`not ${overdue}`);
  }
  return sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
}

function entryQuery(db: Executor) {
  return db
    .selectFrom('leads')
    .innerJoin('customers', 'customers.id', 'leads.customer_id')
    .innerJoin('integrations', 'integrations.id', 'leads.integration_id')
    .leftJoin('messages', 'messages.id', 'leads.last_message_id')
    .selectAll('leads')
    .select([
      'customers.login as c_login',
      'customers.name as c_name',
      'customers.avatar as c_avatar',
      'customers.email as c_email',
      'customers.phone as c_phone',
      'integrations.login as i_login',
      'integrations.type as i_type',
      'messages.id as m_id',
      'messages.created_at as m_at',
      'messages.incoming as m_incoming',
      'messages.text as m_text',
      'messages.url as m_url',
      'messages.attachments as m_attachments',
    ]);
}

type EntryRow = Awaited<ReturnType<ReturnType<typeof entryQuery>['execute']>>[number];

function toEntry(r: EntryRow, tags: string[]): LeadListEntry {
  // Fields listed one by one: an object rest over ~40 columns costs more than the query itself.
  const lead: LeadRow = {
    id: r.id,
    account_id: r.account_id,
    integration_id: r.integration_id,
    customer_id: r.customer_id,
    user_id: r.user_id,
    status_id: r.status_id,
    status_type: r.status_type,
    details: r.details,
    amount: r.amount,
    address: r.address,
    ttn: r.ttn,
    custom_data: r.custom_data,
    custom_fields: r.custom_fields,
    payment_type_id: r.payment_type_id,
    items: r.items,
    unread_count: r.unread_count,
    last_message_id: r.last_message_id,
    last_message_at: r.last_message_at,
    last_message_incoming: r.last_message_incoming,
    awaiting_since: r.awaiting_since,
    response_time: r.response_time,
    responded_at: r.responded_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
  return {
    lead,
    customer: { id: r.customer_id, login: r.c_login, name: r.c_name, avatar: r.c_avatar, email: r.c_email, phone: r.c_phone },
    integration: { id: r.integration_id, login: r.i_login, type: r.i_type },
    message:
      r.m_id === null
        ? null
        : {
            createdAt: r.m_at as number,
            incoming: r.m_incoming === 1,
            text: r.m_text ?? '',
            url: r.m_url ?? '',
            attachments: r.m_attachments === '[]' || r.m_attachments === null ? [] : (JSON.parse(r.m_attachments) as Attachment[]),
          },
    tags,
  };
}

async function withTags(db: Executor, rows: EntryRow[]): Promise<LeadListEntry[]> {
  const tags = await tagsOfLeads(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toEntry(r, tags.get(r.id) ?? []));
}

/**
 * One page of leads, newest last message first (ties: newest lead first). The page's ids come
 * first from the index alone (skipping `offset` rows costs index steps, not joins); then their rows.
 */
export async function listEntries(db: Executor, where: RawBuilder<SqlBool>, page: LeadPage): Promise<LeadListEntry[]> {
  const rows = await db
    .selectFrom('leads')
    .select('leads.id')
    .where(where)
    .orderBy('leads.last_message_at', 'desc')
    .orderBy('leads.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return entriesByIds(
    db,
    rows.map((r) => r.id),
  );
}

/** The leads with these ids, in list order. */
export async function entriesByIds(db: Executor, ids: number[]): Promise<LeadListEntry[]> {
  if (!ids.length) return [];
  if (dialectOf(db) === 'postgres') return taggedEntries(await entriesWithTags(db, { ids }));
  const rows = await entryQuery(db)
    .where('leads.id', 'in', ids)
    .orderBy('leads.last_message_at', 'desc')
    .orderBy('leads.id', 'desc')
    .execute();
  return withTags(db, rows);
}

/** PostgreSQL: {@link entryQuery} with each lead's tags, as `[id, tag, tag_key]` triples (`t_tags`). */
function entryQueryWithTags(db: Executor) {
  return entryQuery(db).select(
    sql<Array<[number, string, string]> | null>`(select json_agg(json_build_array(t.id, t.tag, t.tag_key))
      from lead_tags lt inner join tags t on t.id = lt.tag_id where lt.lead_id = leads.id)`.as('t_tags'),
  );
}

/**
 * PostgreSQL: the entries and their tags in one named statement, the ids as one array parameter so
 * that the text, hence its kept plan, is the same for every page. Planning the entry query's joins
 * anew cost more than running it (~0.4 ms against ~0.2 ms per customer search page), and the tags
 * were a second round trip (docs/performance.md).
 */
const entriesWithTags = prepared((db, p: { ids: number[] }) =>
  entryQueryWithTags(db).where(sql<SqlBool>`leads.id = any(${p.ids})`).orderBy('leads.last_message_at', 'desc').orderBy('leads.id', 'desc'),
);

/**
 * PostgreSQL: the entries, with their tags, of the leads `ids` selects (a query of one column),
 * newest lead first, in the statement that selects them: no round trip of its own (customer
 * search, search.repo.ts). Read the rows with {@link taggedEntries}.
 */
export function entriesOfLeads(db: Executor, ids: Expression<{ id: number }>) {
  return entryQueryWithTags(db).where(sql<SqlBool>`leads.id in (${ids})`).orderBy('leads.id', 'desc');
}

/** A row of {@link entriesWithTags} or {@link entriesOfLeads}: an entry's columns and its tags. */
export type TaggedEntryRow = EntryRow & { t_tags: Array<[number, string, string]> | null };

/** The entries of rows read with their tags ({@link entriesWithTags}, {@link entriesOfLeads}). */
export function taggedEntries(rows: TaggedEntryRow[]): LeadListEntry[] {
  return rows.map((r) =>
    toEntry(
      r,
      (r.t_tags ?? [])
        .map(([id, tag, tag_key]) => ({ id, tag, tag_key }))
        .sort(compareTags)
        .map((t) => t.tag),
    ),
  );
}

export function countQuery(db: Executor, where: RawBuilder<SqlBool>) {
  return db.selectFrom('leads').select(sql<number>`count(*)`.as('n')).where(where);
}

export async function countLeads(db: Executor, where: RawBuilder<SqlBool>): Promise<number> {
  const row = await countQuery(db, where).executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The account's read version (migration 0043): the sum of its per-backend counters, which the
 * database bumps in every transaction writing what lead lists read. Inside a REPEATABLE READ
 * transaction it is the version of that transaction's snapshot.
 */
export async function leadReadVersion(db: Executor, accountId: number): Promise<number> {
  const [row] = await readVersion(db, { accountId });
  return Number(row?.v ?? 0);
}

/** Prepared (db/prepared.ts): a cached list poll on PostgreSQL runs only this statement. */
const readVersion = prepared((db, p: { accountId: number }) =>
  db.selectFrom('lead_read_versions').select(sql<string | number>`coalesce(sum(version), 0)`.as('v')).where('account_id', '=', p.accountId),
);

/**
 * PostgreSQL: folds the version rows of backends that ended into the account's row 0, in one
 * statement, so every account's sum, hence its version, stays what it was (rows of pooled
 * connections that come and go would pile up otherwise). SQLite has only row 0. Answers the rows
 * folded.
 */
export async function foldEndedReadVersions(db: Executor, dialect: DialectName): Promise<number> {
  if (dialect !== 'postgres') return 0;
  const { rows } = await sql<{ n: string }>`with gone as (
      delete from lead_read_versions
      where backend <> 0 and backend not in (select pid from pg_stat_activity where pid is not null)
      returning account_id, version
    ), folded as (
      insert into lead_read_versions (account_id, backend, version)
      select account_id, 0, sum(version) from gone group by account_id
      on conflict (account_id, backend) do update set version = lead_read_versions.version + excluded.version
    )
    select count(*) as n from gone`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/** Ids of the funnel page: per status, its `offset`..`offset+limit` leads in list order. */
export async function funnelPageIds(db: Executor, where: RawBuilder<SqlBool>, page: LeadPage): Promise<number[]> {
  const ranked = db
    .selectFrom('leads')
    .select([
      'leads.id',
      sql<number>`row_number() over (partition by leads.status_id order by leads.last_message_at desc, leads.id desc)`.as('rn'),
    ])
    .where(where);
  const rows = await db
    .selectFrom(ranked.as('ranked'))
    .select('ranked.id')
    .where('ranked.rn', '>', page.offset)
    .where('ranked.rn', '<=', page.offset + page.limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Lead counts per status (null: the inbox) with each status type; with `amounts`, each group's amount sum too. */
export async function countByStatus(
  db: Executor,
  where: RawBuilder<SqlBool>,
  opts: { amounts?: boolean } = {},
): Promise<Array<{ status_id: number | null; status_type: string; n: number; amount?: bigint }>> {
  const rows = await db
    .selectFrom('leads')
    .select(['leads.status_id', 'leads.status_type', sql<number>`count(*)`.as('n')])
    .$if(opts.amounts === true, (q) => q.select([AMOUNT_HIGH.as('amount_high'), AMOUNT_LOW.as('amount_low')]))
    .where(where)
    .groupBy(['leads.status_id', 'leads.status_type'])
    .execute();
  return rows.map((r) => {
    const { amount_high, amount_low, ...rest } = r as typeof r & { amount_high?: string | null; amount_low?: string | null };
    return {
      ...rest,
      n: Number(r.n),
      ...(opts.amounts ? { amount: BigInt(amount_high ?? 0) * AMOUNT_SPLIT + BigInt(amount_low ?? 0) } : {}),
    };
  });
}

/**
 * An amount is an integer of up to 2^53 - 1 (either sign), so a sum of many overflows SQLite's
 * 64-bit `sum()` (an error, not a wrap) and would lose digits as a JavaScript number. Each amount
 * is split into amount / 2^32 and amount % 2^32 (both dialects truncate toward zero, so
 * high * 2^32 + low is the amount again); each part's sum stays within 64 bits for billions of
 * leads, is read as text and joined exactly with BigInt. The same SQL on SQLite and PostgreSQL.
 */
const AMOUNT_SPLIT = 4_294_967_296n;
const AMOUNT_HIGH = sql<string | null>`cast(sum(${col('amount')} / ${sql.lit(Number(AMOUNT_SPLIT))}) as text)`;
const AMOUNT_LOW = sql<string | null>`cast(sum(${col('amount')} % ${sql.lit(Number(AMOUNT_SPLIT))}) as text)`;

const DAY_MS = 86_400_000;

/** New leads per UTC day of `created_at`, ascending. */
export async function newLeadsPerDay(db: Executor, where: RawBuilder<SqlBool>): Promise<Array<{ day: number; n: number }>> {
  const day = sql<number>`(${col('created_at')} / ${sql.lit(DAY_MS)})`;
  const rows = await db
    .selectFrom('leads')
    .select([day.as('day'), sql<number>`count(*)`.as('n')])
    .where(where)
    .groupBy(day)
    .orderBy(day)
    .execute();
  return rows.map((r) => ({ day: Number(r.day), n: Number(r.n) }));
}

/** Median of the known response times (the mean of the two middle ones for an even count). */
export async function responseTimeMedian(db: Executor, where: RawBuilder<SqlBool>): Promise<{ median: number | null; count: number }> {
  const known = sql<SqlBool>`${where} and ${col('response_time')} is not null`;
  const count = await countLeads(db, known);
  if (!count) return { median: null, count };
  const rows = await db
    .selectFrom('leads')
    .select('leads.response_time')
    .where(known)
    .orderBy('leads.response_time')
    .limit(count % 2 ? 1 : 2)
    .offset(Math.floor((count - 1) / 2))
    .execute();
  const middle = rows.map((r) => Number(r.response_time));
  return { median: Math.round(middle.reduce((a, b) => a + b, 0) / middle.length), count };
}

/** Every known response time of `where`'s leads with when the answer came (null when unknown). */
export async function knownResponseTimes(db: Executor, where: RawBuilder<SqlBool>): Promise<Array<{ rt: number; at: number | null }>> {
  const rows = await db
    .selectFrom('leads')
    .select(['leads.response_time', 'leads.responded_at'])
    .where(sql<SqlBool>`${where} and ${col('response_time')} is not null`)
    .execute();
  return rows.map((r) => ({ rt: Number(r.response_time), at: r.responded_at === null ? null : Number(r.responded_at) }));
}

/** Of the leads with a known response time, those answered within `ms`. */
export async function answeredWithin(db: Executor, where: RawBuilder<SqlBool>, ms: number): Promise<number> {
  return countLeads(db, sql<SqlBool>`${where} and ${col('response_time')} is not null and ${col('response_time')} <= ${ms}`);
}

/** Tag values per lead, in tag order (case-free, then exact). */
export async function tagsOfLeads(db: Executor, leadIds: number[]): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  if (!leadIds.length) return out;
  const rows = await db
    .selectFrom('lead_tags')
    .innerJoin('tags', 'tags.id', 'lead_tags.tag_id')
    .select(['lead_tags.lead_id', 'tags.id', 'tags.tag', 'tags.tag_key'])
    .where('lead_tags.lead_id', 'in', leadIds)
    .execute();
  rows.sort(compareTags);
  for (const r of rows) {
    const list = out.get(r.lead_id) ?? [];
    list.push(r.tag);
    out.set(r.lead_id, list);
  }
  return out;
}

/** Serializes changes of one lead on PostgreSQL (SQLite runs one writer at a time already). */
export async function lockLead(db: Executor, dialect: DialectName, accountId: number, id: number): Promise<void> {
  if (dialect !== 'postgres') return;
  await db.selectFrom('leads').select('id').where('id', '=', id).where('account_id', '=', accountId).forUpdate().execute();
}

export async function updateLead(db: Executor, accountId: number, id: number, patch: Updateable<LeadsTable>): Promise<LeadRow> {
  return db
    .updateTable('leads')
    .set(patch)
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function insertLead(db: Executor, row: Insertable<LeadsTable>): Promise<LeadRow> {
  return db.insertInto('leads').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * Marks the lead's unread incoming messages read: all of them, or those that came through
 * channels of the given (type, integration) pairs.
 */
export async function markMessagesRead(db: Executor, leadId: number, sources?: ReadSource[]): Promise<void> {
  let query = db.updateTable('messages').set({ unread: 0 }).where('lead_id', '=', leadId).where('incoming', '=', 1).where('unread', '=', 1);
  if (sources) {
    const pairs = sources.map(
      (s) => sql<SqlBool>`(messages.integration_id = ${s.saId} and messages.source_id in (
        select rs.id from sources rs where rs.integration_id = ${s.saId} and rs.type = ${s.type}))`,
    );
    query = query.where(sql<SqlBool>`(${sql.join(pairs, sql` or `)})`);
  }
  await query.execute();
}

/** Marks the lead's latest incoming message unread again (nothing when it has none). */
export async function markLastIncomingUnread(db: Executor, leadId: number): Promise<void> {
  const last = await db
    .selectFrom('messages')
    .select('id')
    .where('lead_id', '=', leadId)
    .where('incoming', '=', 1)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (last) await db.updateTable('messages').set({ unread: 1 }).where('id', '=', last.id).execute();
}

export async function countUnread(db: Executor, leadId: number): Promise<number> {
  const row = await db
    .selectFrom('messages')
    .select(sql<number>`count(*)`.as('n'))
    .where('lead_id', '=', leadId)
    .where('incoming', '=', 1)
    .where('unread', '=', 1)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Attaches a tag; false when it was attached already. */
export async function attachTag(db: Executor, accountId: number, leadId: number, tagId: number, now: number): Promise<boolean> {
  const result = await db
    .insertInto('lead_tags')
    .values({ account_id: accountId, lead_id: leadId, tag_id: tagId, created_at: now })
    .onConflict((oc) => oc.columns(['lead_id', 'tag_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** Attaches several tags in one statement; answers how many were not attached before. */
export async function attachTags(db: Executor, accountId: number, leadId: number, tagIds: number[], now: number): Promise<number> {
  if (!tagIds.length) return 0;
  const result = await db
    .insertInto('lead_tags')
    .values(tagIds.map((tagId) => ({ account_id: accountId, lead_id: leadId, tag_id: tagId, created_at: now })))
    .onConflict((oc) => oc.columns(['lead_id', 'tag_id']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

/** Detaches a tag; false when it was not attached. */
export async function detachTag(db: Executor, leadId: number, tagId: number): Promise<boolean> {
  const result = await db.deleteFrom('lead_tags').where('lead_id', '=', leadId).where('tag_id', '=', tagId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
