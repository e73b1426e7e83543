import { sql, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Database } from '../../db/schema.js';
import { dialectOf, executeNamed, type Executor } from '../../db/database.js';
import type { SourceType } from '../../channels/integration-types.js';
import type { SearchIndex } from './search-index.js';

/**
 * The SQL of message and customer search. The service decides what to ask (terms, cursors, which
 * plan); these functions only ask it. `rule` is the caller's lead visibility as SQL (policy module),
 * or null for "every lead of the account".
 */

type LeadRule = RawBuilder<SqlBool> | null;

/** A live integration of the account, and the groups of `groups` it has channels of. */
export interface SearchTarget<G extends string> {
  id: number;
  type: string;
  channels: Set<G>;
}

/**
 * A live integration of the account with its type, and for each group of channel types whether the
 * integration has a channel of it (without one a group is exhausted at once: searching it would
 * walk every match of the words to find none). One statement: a round trip per group less.
 *
 * Each type is asked as "the integration's first channel of the type in sources_external_uq's
 * order", which only that index answers without reading and sorting every channel, so every plan
 * of it probes the index and PostgreSQL may keep one (a named statement, not planned at each
 * search: ~0.4 ms, eight times its run). As `exists` with `type in (...)`, a kept generic plan
 * scanned all of the integration's channels for a group it has none of (8 ms at 100k channels),
 * and with the types written as literals it scanned `sources` for the `message` group (61 ms).
 */
export async function searchTarget<G extends string>(
  db: Executor,
  accountId: number,
  integrationId: number,
  groups: Record<G, SourceType[]>,
): Promise<SearchTarget<G> | undefined> {
  const names = Object.keys(groups) as G[];
  const query = db
    .selectFrom('integrations as i')
    .select(['i.id', 'i.type'])
    .select((eb) =>
      names.map((name) => {
        const firstOfType = (type: SourceType) =>
          sql<SqlBool>`(${eb
            .selectFrom('sources as s')
            .select(sql<number>`1`.as('one'))
            .whereRef('s.integration_id', '=', 'i.id')
            .where('s.type', '=', type)
            .orderBy('s.external_id')
            .limit(sql.lit(1))}) is not null`;
        return sql<SqlBool>`(${sql.join(groups[name].map(firstOfType), sql` or `)})`.as(name);
      }),
    )
    .where('i.id', '=', integrationId)
    .where('i.account_id', '=', accountId)
    .where('i.deleted_at', 'is', null);
  const [row] = (await executeNamed(db, query.compile())) as Array<{ id: number; type: string } & Record<G, unknown>>;
  if (!row) return undefined;
  // PostgreSQL answers booleans, SQLite 0 or 1.
  return { id: row.id, type: row.type, channels: new Set(names.filter((name) => row[name] === true || row[name] === 1)) };
}

export interface MessagePageQuery {
  accountId: number;
  integrationId: number;
  sourceTypes: SourceType[];
  terms: string[];
  /** Only messages with a smaller id (the cursor). */
  beforeId?: number;
  limit: number;
  rule: LeadRule;
}

/** Messages of one integration's channels of `sourceTypes` matching every term, newest first. */
export function messagePage(db: Executor, index: SearchIndex, q: MessagePageQuery) {
  let query = db
    .selectFrom('messages as m')
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .innerJoin('leads', 'leads.id', 'm.lead_id')
    .select(['m.id', 'm.lead_id', 'm.profile_id', 'm.user_id', 'm.source_id', 'm.text', 'm.created_at'])
    .where('m.integration_id', '=', q.integrationId)
    .where('m.account_id', '=', q.accountId)
    .where('s.type', 'in', q.sourceTypes)
    .limit(q.limit);
  query = index.newestMessages(query, q.terms);
  if (q.beforeId !== undefined) query = query.where('m.id', '<', q.beforeId);
  if (q.rule) query = query.where(q.rule);
  return query.execute();
}

/**
 * PostgreSQL: how many of the integration's newest messages (before the cursor) the first step of
 * {@link messagePageWalking} tests. A word in about 0.1% of the messages or more fills a page
 * within them; rarer words are few in the index, where the second step finds them cheaply.
 */
export const WALK_WINDOW = 5000;

const PAGE_COLUMNS = ['m.id', 'm.lead_id', 'm.profile_id', 'm.user_id', 'm.source_id', 'm.text', 'm.created_at'] as const;

/**
 * PostgreSQL's message page, the same answer as {@link messagePage} in two steps. One query lets
 * the planner choose between walking the integration's messages newest first and taking every
 * match from the GIN index and sorting them, and it chooses from estimates that take a query's
 * words as independent: `sunday shop` (27,760 matches of 1M) was estimated at 760 rows, so every
 * match was read and sorted (~300 ms), and a word it had no statistics for walked the whole table
 * (~500 ms). So: (1) the newest {@link WALK_WINDOW} messages of the integration through
 * `messages_integration_id_idx`, each tested against the words, stopping at the page (frequent
 * words: a few ms); (2) only when that leaves the page short, the matches older than the window
 * from the GIN index (materialized, so it is not turned back into a walk), which are then few.
 * docs/performance.md, issue 19.
 */
export async function messagePageWalking(db: Executor, index: SearchIndex, q: MessagePageQuery, window = WALK_WINDOW) {
  const own = (qb: SelectQueryBuilder<Database, 'messages', object>) => {
    let scoped = qb.where('messages.integration_id', '=', q.integrationId).where('messages.account_id', '=', q.accountId);
    if (q.beforeId !== undefined) scoped = scoped.where('messages.id', '<', q.beforeId);
    return scoped;
  };
  // The walk's ids, newest first, from messages_integration_id_idx alone (its predicate, migration
  // 0067, is true of every message). The integration as a one-element array and the order by
  // (integration, id) leave that index the only one to give the order: with `integration_id = $1`
  // the order was id alone, which the primary key gives too, and for an integration holding a large
  // share of the table (the planner's estimate) it walked messages_pkey newest first, reading every
  // newer message of the account's other integrations before its own (a quiet channel beside a
  // busy widget: 9-26 ms for ~1). Not the account: the integration is the account's
  // (searchTarget), and the rows are checked below.
  const postgres = dialectOf(db) === 'postgres';
  const ids = (qb: SelectQueryBuilder<Database, 'messages', object>) =>
    qb
      .select(['messages.integration_id', 'messages.id'])
      .$if(postgres, (w) =>
        w.where(sql<SqlBool>`messages.integration_id = any(array[${q.integrationId}]::bigint[]) and search_tsv is not null`),
      )
      .$if(!postgres, (w) => w.where('messages.integration_id', '=', q.integrationId))
      .$if(q.beforeId !== undefined, (w) => w.where('messages.id', '<', q.beforeId as number))
      .orderBy('messages.integration_id', 'desc')
      .orderBy('messages.id', 'desc');
  const walk = ids(db.selectFrom('messages')).limit(sql.lit(window));
  // Each walked id's row, looked up by its key. On PostgreSQL through a lateral subquery that
  // cannot be flattened (`offset 0`): as a plain join the planner merged the ids with a walk of
  // messages_pkey. SQLite tests the same steps with a plain join (no LATERAL there).
  const rowColumns = ['r.id', 'r.lead_id', 'r.profile_id', 'r.user_id', 'r.source_id', 'r.text', 'r.created_at', 'r.account_id'] as const;
  const withRows = postgres
    ? db.selectFrom(walk.as('w')).innerJoinLateral(
        (eb) =>
          eb
            .selectFrom('messages as r')
            .select(rowColumns)
            .select(sql<string>`r.search_tsv`.as('search_tsv'))
            .whereRef('r.id', '=', 'w.id')
            .offset(sql.lit(0))
            .as('m'),
        (join) => join.onTrue(),
      )
    : db.selectFrom(walk.as('w')).innerJoin(
        (eb) => eb.selectFrom('messages as r').select(rowColumns).as('m'),
        (join) => join.onRef('m.id', '=', 'w.id'),
      );
  let first = withRows
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .innerJoin('leads', 'leads.id', 'm.lead_id')
    .select(PAGE_COLUMNS)
    .where('m.account_id', '=', q.accountId)
    .where('s.type', 'in', q.sourceTypes)
    .where(index.messageMatchesEachRow(q.terms, 'm'))
    .orderBy('w.integration_id', 'desc')
    .orderBy('w.id', 'desc')
    .limit(sql.lit(q.limit));
  if (q.rule) first = first.where(q.rule);
  // Every plan of this shape reads the ids from the integration's index and stops at the page, so
  // PostgreSQL may keep one: a named statement, planned once per connection instead of at every
  // search (~0.5 ms, about as long as the walk itself). Only without a visibility rule, whose lists
  // of ids would give every employee texts of their own to keep.
  const rows = q.rule ? await first.execute() : await executeNamed(db, first.compile());
  if (rows.length >= q.limit) return rows;

  // The window's last message: everything newer was tested above. None: the window was all of them.
  const edge = await ids(db.selectFrom('messages'))
    .offset(window - 1)
    .limit(1)
    .executeTakeFirst();
  if (!edge) return rows;
  let rest = db
    .with(
      (cte) => cte('hits').materialized(),
      (w) =>
        own(w.selectFrom('messages'))
          .select(['id', 'lead_id', 'profile_id', 'user_id', 'source_id', 'text', 'created_at'])
          .where('messages.id', '<', edge.id)
          .where(index.messageMatches(q.terms, 'messages')),
    )
    .selectFrom('hits as m')
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .innerJoin('leads', 'leads.id', 'm.lead_id')
    .select(PAGE_COLUMNS)
    .where('s.type', 'in', q.sourceTypes)
    .orderBy('m.id', 'desc')
    .limit(q.limit - rows.length);
  if (q.rule) rest = rest.where(q.rule);
  return [...rows, ...(await rest.execute())];
}

/** Whether `messageId` is a message of the integration's channels of `sourceTypes` (an issued cursor). */
export async function isMessageOf(db: Executor, integrationId: number, sourceTypes: SourceType[], messageId: number): Promise<boolean> {
  const row = await db
    .selectFrom('messages as m')
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .select('m.id')
    .where('m.id', '=', messageId)
    .where('m.integration_id', '=', integrationId)
    .where('s.type', 'in', sourceTypes)
    .executeTakeFirst();
  return row !== undefined;
}

/** Whether `leadId` is a lead of the account (an issued customer-search cursor). */
export async function isLeadOf(db: Executor, accountId: number, leadId: number): Promise<boolean> {
  const row = await db.selectFrom('leads').select('id').where('id', '=', leadId).where('account_id', '=', accountId).executeTakeFirst();
  return row !== undefined;
}

/**
 * SQLite: whether more than `threshold` customers of the account match. The index match drives it,
 * each match is checked in customers_account_idx (not the table: fewer pages), and it stops at the
 * threshold (~0.3 ms).
 */
export async function customerMatchesExceed(
  db: Executor,
  index: SearchIndex,
  accountId: number,
  alternatives: string[][],
  threshold: number,
): Promise<boolean> {
  const { rows } = await sql<{ n: number }>`select count(*) as n from (select 1 from (${index.customerIds(alternatives)}) as m
    where exists (select 1 from customers as c where c.account_id = ${accountId} and c.id = m.id)
    limit ${sql.lit(threshold + 1)})`.execute(db);
  return rows[0].n > threshold;
}

/**
 * PostgreSQL: how many of the account's newest leads (before the cursor) customer search tests
 * first. A query matching ~1% of the customers or more fills a page within them.
 */
export const CUSTOMER_WALK_WINDOW = 2000;

/**
 * PostgreSQL customer search, the same answer as the `words` plan in two steps, like
 * {@link messagePageWalking}. That plan reads every matching lead from the GIN index and sorts
 * them (`inbox.example`, 8k customers: ~13 ms, more under load), and the GIN scan of a common word
 * is itself costly; yet common words fill a page within a few hundred of the newest leads. So:
 * (1) the account's newest {@link CUSTOMER_WALK_WINDOW} leads, each tested against the words,
 * stopping at the page; (2) only when the page is short, the `words` plan for the leads older than
 * the window (then the matches are few). Both steps read `lead_words`, which holds each lead's
 * customer's words (migration 0070), so no lead's customer is looked up (the window's customers:
 * 3-10 ms for a common name at 100k customers; the copied words: ~0.7 ms). docs/performance.md,
 * issue 19.
 */
export async function customerLeadIdsWalking(
  db: Executor,
  index: SearchIndex,
  q: CustomerLeadsQuery,
  window = CUSTOMER_WALK_WINDOW,
): Promise<number[]> {
  // The window: the entries of lead_words_account_idx from the account's newest lead (before the
  // cursor) backwards, as a row comparison, then only the account's own. Written so, every plan
  // walks that index newest first and stops at the window, whatever PostgreSQL guesses of the
  // account's size: with `account_id = $1`, a kept plan that guessed a small account read all of
  // its leads and sorted them (a bitmap scan), which for a large account is every lead it has.
  // A smaller account's window runs into the next account's entries, which are skipped.
  const words = (limit: number, offset?: number) =>
    db
      .selectFrom('lead_words')
      .select(['lead_words.account_id', 'lead_words.lead_id', 'lead_words.search_tsv'])
      .where(sql<SqlBool>`(lead_words.account_id, lead_words.lead_id) < (${q.accountId}, ${q.beforeId ?? Number.MAX_SAFE_INTEGER})`)
      .orderBy('lead_words.account_id', 'desc')
      .orderBy('lead_words.lead_id', 'desc')
      .$if(offset !== undefined, (w) => w.offset(sql.lit(offset as number)))
      .limit(sql.lit(limit));
  let first = db
    .selectFrom(words(window).as('w'))
    .select('w.lead_id as id')
    .where('w.account_id', '=', q.accountId)
    .where(index.customerMatchesEachRow(q.alternatives, 'w'))
    .orderBy('w.account_id', 'desc')
    .orderBy('w.lead_id', 'desc')
    .limit(sql.lit(q.limit));
  if (q.rule) first = first.innerJoin('leads', 'leads.id', 'w.lead_id').where(q.rule);
  // Every plan of this shape walks the window and stops at the page, so PostgreSQL may keep one: a
  // named statement, not planned at each search. Not with a visibility rule, whose lists of ids
  // would give every employee texts of their own to keep.
  const ids = (q.rule ? await first.execute() : await executeNamed(db, first.compile())).map((r) => r.id);
  if (ids.length >= q.limit) return ids;
  // The window's last entry: everything newer was tested above. None, or another account's: the
  // window held all of the account's leads.
  const edge = await words(1, window - 1).executeTakeFirst();
  if (!edge || edge.account_id !== q.accountId) return ids;
  const rest = await customerLeadIds(db, index, 'words', { ...q, beforeId: edge.lead_id, limit: q.limit - ids.length });
  return [...ids, ...rest];
}

/**
 * How customer search finds the leads of matching customers (the service chooses, see there):
 * `words` (PostgreSQL: every matching lead from `lead_words`' GIN index), `walk-leads` (SQLite,
 * many matches), `join` (SQLite, few matches).
 */
export type CustomerLeadsPlan = 'words' | 'walk-leads' | 'join';

export interface CustomerLeadsQuery {
  accountId: number;
  alternatives: string[][];
  beforeId?: number;
  limit: number;
  rule: LeadRule;
}

/** Ids of the leads whose customer matches, newest lead first. */
export async function customerLeadIds(db: Executor, index: SearchIndex, plan: CustomerLeadsPlan, q: CustomerLeadsQuery): Promise<number[]> {
  if (plan === 'words') return leadWordsMatches(db, index, q);
  const matches = index.customerMatches(q.alternatives, 'c');
  let query =
    plan === 'walk-leads'
      ? // Walks the leads newest first, each tested against the matches: stops at the page. The
        // walk goes through every account's leads by id, so it is only chosen when this
        // account's matches are many.
        db
          .selectFrom('leads')
          .select('leads.id')
          .where(sql`+leads.account_id`, '=', q.accountId)
          .where(sql<SqlBool>`+leads.customer_id in (${index.customerIds(q.alternatives)})`)
          .where((eb) =>
            eb.exists(
              eb
                .selectFrom('customers as c')
                .select('c.id')
                .whereRef('c.id', '=', 'leads.customer_id')
                .where('c.account_id', '=', q.accountId),
            ),
          )
      : db
          .selectFrom('leads')
          .innerJoin('customers as c', 'c.id', 'leads.customer_id')
          .select('leads.id')
          // Unary plus: SQLite must not drive this query by the account's lead index (it would
          // walk all of the account's leads, ~250 ms at 100k).
          .where(sql`+leads.account_id`, '=', q.accountId)
          .where('c.account_id', '=', q.accountId)
          .where(matches);
  query = query.orderBy('leads.id', 'desc').limit(q.limit);
  if (q.beforeId !== undefined) query = query.where('leads.id', '<', q.beforeId);
  if (q.rule) query = query.where(q.rule);
  return (await query.execute()).map((r) => r.id);
}

/**
 * PostgreSQL: every lead of the account whose words match, from `lead_words`' GIN index
 * (migration 0070), materialized and then sorted. Not a walk of the account's leads: PostgreSQL
 * estimates a prefix outside its statistics at 0.5% of the rows, and with the order and limit in
 * the same query it walked the leads newest first, testing each (100-350 ms for the name of one
 * customer at 100k leads). Customer search reaches this only when the newest leads held less than
 * a page ({@link customerLeadIdsWalking}), so the matches are few. The leads' rows are read only
 * for a visibility rule.
 */
async function leadWordsMatches(db: Executor, index: SearchIndex, q: CustomerLeadsQuery): Promise<number[]> {
  let query = db
    .with(
      (cte) => cte('hits').materialized(),
      (w) =>
        w
          .selectFrom('lead_words')
          .select('lead_id')
          .where('account_id', '=', q.accountId)
          .where(index.customerMatches(q.alternatives, 'lead_words'))
          .$if(q.beforeId !== undefined, (h) => h.where('lead_id', '<', q.beforeId as number)),
    )
    .selectFrom('hits')
    .select('hits.lead_id as id')
    .orderBy('hits.lead_id', 'desc')
    .limit(q.limit);
  if (q.rule) query = query.innerJoin('leads', 'leads.id', 'hits.lead_id').where(q.rule);
  return (await query.execute()).map((r) => r.id);
}
