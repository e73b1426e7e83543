import { sql, type RawBuilder, type Selectable, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { MessagesTable } from '../../db/schema.js';
import { kept } from '../../db/kept.js';
import { prepared } from '../../db/prepared.js';
import type { SourceType } from '../channels/integration-types.js';
import type { SearchIndex } from './search-index.js';
import type { WordQuery } from './query-terms.js';
import { entriesOfLeads, taggedEntries, type TaggedEntryRow } from '../leads/leads.repo.js';
import type { LeadListEntry } from '../leads/leads.types.js';

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
  const [row] = await kept(targetStatements, groups, () => targetStatement(groups))(db, { accountId, integrationId });
  if (!row) return undefined;
  // PostgreSQL answers booleans, SQLite 0 or 1.
  return { id: row.id, type: row.type, channels: new Set(names.filter((name) => row[name] === true || row[name] === 1)) };
}

/** {@link searchTarget}'s statement for each groups object, built once (db/prepared.ts). */
const targetStatements = new WeakMap<object, ReturnType<typeof targetStatement>>();

function targetStatement(groups: Record<string, SourceType[]>) {
  return prepared((db, p: { accountId: number; integrationId: number }) =>
    db
      .selectFrom('integrations as i')
      .select(['i.id', 'i.type'])
      .select((eb) =>
        Object.entries(groups).map(([name, types]) => {
          const firstOfType = (type: SourceType) =>
            sql<SqlBool>`(${eb
              .selectFrom('sources as s')
              .select(sql<number>`1`.as('one'))
              .whereRef('s.integration_id', '=', 'i.id')
              .where('s.type', '=', type)
              .orderBy('s.external_id')
              .limit(sql.lit(1))}) is not null`;
          return sql<SqlBool>`(${sql.join(types.map(firstOfType), sql` or `)})`.as(name);
        }),
      )
      .where('i.id', '=', p.integrationId)
      .where('i.account_id', '=', p.accountId)
      .where('i.deleted_at', 'is', null),
  );
}

export interface MessagePageQuery {
  accountId: number;
  integrationId: number;
  sourceTypes: SourceType[];
  words: WordQuery;
  /** Only messages with a smaller id (the cursor). */
  beforeId?: number;
  limit: number;
  rule: LeadRule;
}

/** The columns of a message search's page. */
const PAGE_COLUMNS = ['m.id', 'm.lead_id', 'm.profile_id', 'm.user_id', 'm.source_id', 'm.text', 'm.created_at'] as const;

/** Messages of one integration's channels of `sourceTypes` matching every term, newest first. */
export function messagePage(db: Executor, index: SearchIndex, q: MessagePageQuery) {
  let query = db
    .selectFrom('messages as m')
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .innerJoin('leads', 'leads.id', 'm.lead_id')
    .select(PAGE_COLUMNS)
    .where('m.integration_id', '=', q.integrationId)
    .where('m.account_id', '=', q.accountId)
    .where('s.type', 'in', q.sourceTypes)
    .limit(q.limit);
  query = index.newestMessages(query, q.words);
  if (q.beforeId !== undefined) query = query.where('m.id', '<', q.beforeId);
  if (q.rule) query = query.where(q.rule);
  return query.execute();
}

/**
 * PostgreSQL: the window of a walk newest first through an index on (`owner`, `id`) (the message
 * and customer walks): from `ownerId`'s entry `lastId` or the one before it (lastBefore gives
 * `lastId` for a cursor) backwards, `limit` entries after `offset`. The start is written as a row
 * comparison, `(owner, id) <= (ownerId, lastId)`, which only that index can both answer and give
 * the order of, so that every plan walks it from there and stops at the window; the walk goes on
 * into the entries of the owners made before, which the caller skips. With `owner = $1` or
 * `owner = any(array[$1])`, a kept plan guesses every owner at the average owner's share of the
 * table, and for a large owner it read all of its entries and sorted them (a bitmap scan: the
 * test database's kept plan for an account of 5,001 leads). PostgreSQL estimates a row comparison
 * from its first column alone: kept, as a third of the table; planned for the values, as the
 * owners up to and including `ownerId` (`<=`; with `<` and the cursor itself, only those made
 * before it). docs/performance.md.
 */
// biome-ignore lint/suspicious/noExplicitAny: a select over either walk's table
function walkWindow<QB extends SelectQueryBuilder<any, any, any>>(
  qb: QB,
  [owner, id]: [string, string],
  ownerId: number | RawBuilder<number>,
  lastId: number | RawBuilder<number>,
  limit: number,
  offset?: number,
): QB {
  const ordered = qb
    .where(sql<SqlBool>`(${sql.ref(owner)}, ${sql.ref(id)}) <= (${ownerId}, ${lastId})`)
    .orderBy(sql.ref(owner), 'desc')
    .orderBy(sql.ref(id), 'desc');
  return (offset === undefined ? ordered : ordered.offset(sql.lit(offset))).limit(sql.lit(limit)) as QB;
}

/**
 * PostgreSQL: how many of the integration's newest messages (before the cursor) the first step of
 * {@link messagePageWalking} tests. A word in about 0.1% of the messages or more fills a page
 * within them; rarer words are few in the index, where the second step finds them cheaply.
 */
export const WALK_WINDOW = 5000;

type PageRow = Pick<Selectable<MessagesTable>, 'id' | 'lead_id' | 'profile_id' | 'user_id' | 'source_id' | 'text' | 'created_at'>;

/** The values of a message walk: given, or a prepared statement's parameters. */
interface WalkValues {
  integrationId: number;
  /** The newest message id the walk may start at (lastBefore). */
  lastId: number;
  accountId: number;
  /** The words' query (SearchIndex.messageQuery). */
  words: string;
}

/** The same values in {@link messageWalk}'s SQL: the ids as InitPlans ({@link hidden}), the words as their text. */
interface WalkStart {
  integrationId: RawBuilder<number>;
  lastId: RawBuilder<number>;
  accountId: RawBuilder<number>;
  words: string;
}

/** {@link messagePageWalking}'s statement without a visibility rule, per shape (channel types, page, window). */
const messageWalks = new Map<string, (db: Executor, values: WalkValues) => Promise<PageRow[]>>();

/** The newest id a walk starts at, for a cursor (exclusive) or none. */
function lastBefore(beforeId: number | undefined): number {
  return beforeId === undefined ? Number.MAX_SAFE_INTEGER : beforeId - 1;
}

/**
 * A value of a statement as an InitPlan (`(select $n::int8)`), which no plan can look into. The
 * searches' statements take their values this way: planned for its values, a walk was estimated
 * as reading fewer rows than a kept plan guesses (all of the table from the newest id, against a
 * third), so PostgreSQL found every plan for the values cheaper by more than its planning, and
 * planned the statement at each search (~1 ms, more than running it).
 */
function hidden(value: number): RawBuilder<number> {
  return sql<number>`(select ${value}::int8)`;
}

/**
 * The window of {@link messagePageWalking}: message_words' entries from the integration's newest
 * before the cursor backwards, through its primary key (walkWindow), `limit` of them after `offset`.
 */
function walkEntries(db: Executor, v: WalkStart, limit: number, offset?: number) {
  const entries = db
    .selectFrom('message_words')
    .select(['message_words.integration_id', 'message_words.message_id', 'message_words.search_tsv']);
  return walkWindow(entries, ['message_words.integration_id', 'message_words.message_id'], v.integrationId, v.lastId, limit, offset);
}

/**
 * PostgreSQL's message page, the same answer as {@link messagePage} in two steps. One query lets
 * the planner choose between walking the integration's messages newest first and taking every
 * match from the GIN index and sorting them, and it chooses from estimates that take a query's
 * words as independent: `sunday shop` (27,760 matches of 1M) was estimated at 760 rows, so every
 * match was read and sorted (~300 ms), and a word it had no statistics for walked the whole table
 * (~500 ms). So: (1) the newest {@link WALK_WINDOW} entries of the integration in `message_words`
 * (each message's words beside its id, migration 0071), each tested against the words, stopping
 * at the page, and only the matches' messages looked up (frequent words: well under 1 ms); (2) only
 * when that leaves the page short, the matches older than the window from `message_words`' GIN
 * index, which are then few. Both steps are one statement ({@link messageWalk}); as three (the
 * first step, the window's last entry, the older matches) a rare word paid two round trips more.
 * docs/performance.md.
 */
export async function messagePageWalking(db: Executor, index: SearchIndex, q: MessagePageQuery, window = WALK_WINDOW) {
  const values = {
    integrationId: q.integrationId,
    lastId: lastBefore(q.beforeId),
    accountId: q.accountId,
    words: index.messageQuery(q.words),
  };
  // Every plan of the statement walks the integration's entries and stops at the page, or reads
  // the older matches by their words, so PostgreSQL may keep one: a named statement, planned once
  // per connection instead of at every search (~0.5 ms, about as long as the walk itself), and
  // built once per shape (db/prepared.ts: building and compiling it took ~50 us a search). Only
  // without a visibility rule, whose lists of ids would give every employee texts of their own.
  if (q.rule) return messageWalk(db, index, values, q.sourceTypes, q.limit, window, q.rule).execute();
  const { sourceTypes, limit } = q;
  const run = kept(messageWalks, `${sourceTypes.join(',')}/${limit}/${window}`, () =>
    prepared((pdb, p: WalkValues) => messageWalk(pdb, index, p, sourceTypes, limit, window, null)),
  );
  return run(db, values);
}

/**
 * A walk's matches older than its window, as `id`, for the statement's CTE: from the table's GIN
 * index, materialized by the caller (not turned back into a walk). `first` (the window's matches)
 * and `edge` (the window's last entry) are CTEs of the same statement. It runs only when `first`
 * is short of `limit` and `edge` is the owner's (then the matches are few; no edge, or another
 * owner's, means the window held all of the owner's entries): conditions without a column of the
 * scan, which PostgreSQL tests once before running it (a one-time filter). The owner and the edge
 * are written `+ 0`, so that only the words can lead an index scan: a kept plan guesses `id < $n`
 * at a third of the table and the words at 0.5%, and in the test database it walked the table's
 * key below the edge, testing every older entry.
 */
function olderMatches(
  db: Executor,
  table: 'lead_words' | 'message_words',
  [owner, id]: [string, string],
  ownerId: RawBuilder<number>,
  matches: RawBuilder<SqlBool>,
  limit: number,
) {
  const col = (name: string) => sql.ref(`${table}.${name}`);
  return db
    .selectFrom(table)
    .select(sql<number>`${col(id)}`.as('id'))
    .where(sql<SqlBool>`${col(owner)} + 0 = ${ownerId}`)
    .where(matches)
    .where(sql<SqlBool>`${col(id)} + 0 < (select ${sql.ref(`edge.${id}`)} from edge)`)
    .where(sql<SqlBool>`(select count(*) from first) < ${sql.lit(limit)}`)
    .where(sql<SqlBool>`(select ${sql.ref(`edge.${owner}`)} from edge) = ${ownerId}`);
}

/**
 * The messages of `entries` (an alias with a `message_id` column), of the account and of
 * `sourceTypes`' channels (and that `rule` shows). Not the account in the walk: the integration
 * is the account's (searchTarget), and the messages are checked here. Each message looked up by
 * its key through a lateral subquery that cannot be flattened (`offset 0`): as a plain join the
 * planner may merge the walk with one of messages_pkey, or hash every match against the
 * messages.
 */
function messagesOf(
  // biome-ignore lint/suspicious/noExplicitAny: a select over either walk's entries, aliased `w`
  entries: SelectQueryBuilder<any, any, any>,
  v: WalkStart,
  sourceTypes: SourceType[],
  rule: LeadRule,
) {
  const rows = entries
    .innerJoinLateral(
      (eb) =>
        eb
          .selectFrom('messages as r')
          .select(['r.id', 'r.lead_id', 'r.profile_id', 'r.user_id', 'r.source_id', 'r.text', 'r.created_at', 'r.account_id'])
          .whereRef('r.id', '=', sql.ref('w.message_id'))
          .offset(sql.lit(0))
          .as('m'),
      (join) => join.onTrue(),
    )
    .innerJoin('sources as s', 's.id', 'm.source_id')
    .innerJoin('leads', 'leads.id', 'm.lead_id')
    .select(PAGE_COLUMNS)
    .where('m.account_id', '=', v.accountId)
    .where('s.type', 'in', sourceTypes);
  return rule ? rows.where(rule) : rows;
}

/**
 * {@link messagePageWalking}'s statement, newest first, `limit` messages:
 * - `first`: the window's entries that are the integration's and match the words (tested before
 *   any message is looked up), and their messages, stopping at the page;
 * - `edge`: the window's last entry. Everything newer was tested in `first`. None, or another
 *   integration's: the window held all of the integration's messages with words;
 * - `hits`: the older matches ({@link olderMatches});
 * - their messages newest first (`rest`), looked up until the page is full.
 * Every message of `first` is newer than `edge`, every one of `rest` older, so the page is the
 * union's newest `limit`. The values are InitPlans ({@link hidden}), so PostgreSQL keeps a plan.
 */
function messageWalk(
  db: Executor,
  index: SearchIndex,
  values: WalkValues,
  sourceTypes: SourceType[],
  limit: number,
  window: number,
  rule: LeadRule,
) {
  const page = sql.lit(limit);
  const v: WalkStart = {
    integrationId: hidden(values.integrationId),
    lastId: hidden(values.lastId),
    accountId: hidden(values.accountId),
    words: values.words,
  };
  const first = messagesOf(db.selectFrom(walkEntries(db, v, window).as('w')), v, sourceTypes, rule)
    .where(sql.ref('w.integration_id'), '=', v.integrationId)
    .where(index.messageMatchesEachRow(v.words, 'w'))
    .orderBy(sql.ref('w.integration_id'), 'desc')
    .orderBy(sql.ref('w.message_id'), 'desc')
    .limit(page);
  return db
    .with(
      (cte) => cte('first').materialized(),
      () => first,
    )
    .with(
      (cte) => cte('edge').materialized(),
      () =>
        walkEntries(db, v, 1, window - 1)
          .clearSelect()
          .select(['message_words.integration_id', 'message_words.message_id']),
    )
    .with(
      (cte) => cte('hits').materialized(),
      () =>
        olderMatches(
          db,
          'message_words',
          ['integration_id', 'message_id'],
          v.integrationId,
          index.messageMatchesEachRow(v.words, 'message_words'),
          limit,
        ),
    )
    .selectFrom((eb) => {
      const older = eb.selectFrom('hits').select('hits.id as message_id').as('w');
      const rest = messagesOf(eb.selectFrom(older), v, sourceTypes, rule).orderBy(sql.ref('w.message_id'), 'desc').limit(page);
      return eb
        .selectFrom('first')
        .selectAll()
        .unionAll(eb.selectFrom(rest.as('rest')).selectAll())
        .as('found');
    })
    .selectAll()
    .orderBy('found.id', 'desc')
    .limit(page)
    .$castTo<PageRow>();
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

/** Whether message `messageId` of the integration matches `words` (which tier a cursor is in). */
export async function messageMatches(db: Executor, index: SearchIndex, integrationId: number, messageId: number, words: WordQuery) {
  const query = db.selectFrom('messages as m').select('m.id').where('m.id', '=', messageId).where('m.integration_id', '=', integrationId);
  return (await index.newestMessages(query, words).executeTakeFirst()) !== undefined;
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
 * PostgreSQL customer search: the entries (leads/leads.repo.ts) of the leads whose customer's words
 * match, newest lead first, `q.limit` of them, in one statement. Reading every matching lead from
 * `lead_words`' GIN index and sorting them costs ~1 us a match (`inbox.example`, 8k customers:
 * ~13 ms, more under load), and the GIN scan of a common word is itself costly; yet common words
 * fill a page within a few hundred of the newest leads. So, like {@link messagePageWalking}: (1)
 * the account's newest {@link CUSTOMER_WALK_WINDOW} leads, each tested against the words,
 * stopping at the page; (2) only when the page is short, the older matches from the GIN index
 * (then they are few). Both steps read `lead_words`, which holds each lead's customer's words
 * (migration 0070), so no lead's customer is looked up (the window's customers: 3-10 ms for a
 * common name at 100k customers; the copied words: ~0.7 ms).
 *
 * Both steps are one statement ({@link leadWalk}) with the page's entries (entriesOfLeads): the
 * second step runs only when the first left the page short, which PostgreSQL decides once per run
 * (a one-time filter). As four statements (the first step, the window's last entry, the older
 * matches, the entries), a search whose page the newest leads do not fill paid three round trips
 * more, each worth more than its query under load. docs/performance.md.
 */
export async function customerLeadsWalking(
  db: Executor,
  index: SearchIndex,
  q: CustomerLeadsQuery,
  window = CUSTOMER_WALK_WINDOW,
): Promise<LeadListEntry[]> {
  const values = { accountId: q.accountId, lastId: lastBefore(q.beforeId), words: index.customerQuery(q.alternatives) };
  // Every plan of the first step walks the window and stops at the page, and the second step's
  // matches are materialized, so PostgreSQL may keep one plan: a named statement, not planned at
  // each search, built once per shape (db/prepared.ts). Not with a visibility rule, whose lists of
  // ids would give every employee texts of their own to keep.
  if (q.rule) return taggedEntries(await entriesOfLeads(db, leadWalk(db, index, values, q.limit, window, q.rule)).execute());
  const { limit } = q;
  const run = kept(leadWalks, `${limit}/${window}`, () =>
    prepared((pdb, p: LeadWalkValues) => entriesOfLeads(pdb, leadWalk(pdb, index, p, limit, window, null))),
  );
  return taggedEntries(await run(db, values));
}

/** The values of customer search's statement: given, or a prepared statement's parameters. */
interface LeadWalkValues {
  accountId: number;
  /** The newest lead id the walk may start at (lastBefore). */
  lastId: number;
  /** The words' query (SearchIndex.customerQuery). */
  words: string;
}

/** Where {@link leadWalkEntries} starts: the account and its newest lead id to walk from, as SQL. */
interface LeadWalkStart {
  accountId: RawBuilder<number>;
  lastId: RawBuilder<number>;
}

/** {@link customerLeadsWalking}'s statement without a visibility rule, per shape (page, window). */
const leadWalks = new Map<string, (db: Executor, values: LeadWalkValues) => Promise<TaggedEntryRow[]>>();

/**
 * The window of {@link customerLeadsWalking}: the entries of lead_words_account_idx from the
 * account's newest before the cursor backwards (walkWindow), `limit` of them after `offset`.
 */
function leadWalkEntries(db: Executor, v: LeadWalkStart, limit: number, offset?: number) {
  const entries = db.selectFrom('lead_words').select(['lead_words.account_id', 'lead_words.lead_id', 'lead_words.search_tsv']);
  return walkWindow(entries, ['lead_words.account_id', 'lead_words.lead_id'], v.accountId, v.lastId, limit, offset);
}

/**
 * {@link customerLeadsWalking}'s statement, newest lead first, `limit` of them:
 * - `first`: the window's leads of the account whose words match (and that `rule` shows), stopping
 *   at the page;
 * - `edge`: the window's last entry. Everything newer was tested in `first`. None, or another
 *   account's: the window held all of the account's leads, and there is nothing older to find;
 * - `rest`: the older matches ({@link olderMatches}), then sorted. Not a walk of the account's
 *   leads: PostgreSQL estimates a prefix outside its statistics at 0.5% of the rows, and with the
 *   order and limit in the same query it walked the leads newest first, testing each (100-350 ms
 *   for the name of one customer at 100k leads). The leads' rows are read only for a visibility
 *   rule.
 * Every lead of `first` is newer than `edge`, every lead of `rest` older, so the answer is the
 * union's newest `limit`. The values are InitPlans ({@link hidden}), so PostgreSQL keeps a plan.
 */
function leadWalk(db: Executor, index: SearchIndex, v: LeadWalkValues, limit: number, window: number, rule: LeadRule) {
  const page = sql.lit(limit);
  const start = { accountId: hidden(v.accountId), lastId: hidden(v.lastId) };
  return db
    .with(
      (cte) => cte('first').materialized(),
      () => {
        const first = db
          .selectFrom(leadWalkEntries(db, start, window).as('w'))
          .select('w.lead_id as id')
          .where('w.account_id', '=', start.accountId)
          .where(index.customerMatchesEachRow(v.words, 'w'))
          .orderBy('w.account_id', 'desc')
          .orderBy('w.lead_id', 'desc')
          .limit(page);
        return rule ? first.innerJoin('leads', 'leads.id', 'w.lead_id').where(rule) : first;
      },
    )
    .with(
      (cte) => cte('edge').materialized(),
      () =>
        leadWalkEntries(db, start, 1, window - 1)
          .clearSelect()
          .select(['lead_words.account_id', 'lead_words.lead_id']),
    )
    .with(
      (cte) => cte('rest').materialized(),
      () =>
        olderMatches(
          db,
          'lead_words',
          ['account_id', 'lead_id'],
          start.accountId,
          index.customerMatchesEachRow(v.words, 'lead_words'),
          limit,
        ),
    )
    .selectFrom((eb) =>
      eb
        .selectFrom('first')
        .select('first.id')
        .unionAll(
          rule
            ? eb.selectFrom('rest').innerJoin('leads', 'leads.id', 'rest.id').select('rest.id').where(rule)
            : eb.selectFrom('rest').select('rest.id'),
        )
        .as('found'),
    )
    .select('found.id')
    .orderBy('found.id', 'desc')
    .limit(page);
}

/**
 * How SQLite's customer search finds the leads of matching customers (the service chooses, see
 * there): `walk-leads` (many matches), `join` (few matches). PostgreSQL's is
 * {@link customerLeadsWalking}.
 */
export type CustomerLeadsPlan = 'walk-leads' | 'join';

export interface CustomerLeadsQuery {
  accountId: number;
  alternatives: string[][];
  beforeId?: number;
  limit: number;
  rule: LeadRule;
}

/** Ids of the leads whose customer matches, newest lead first. */
export async function customerLeadIds(db: Executor, index: SearchIndex, plan: CustomerLeadsPlan, q: CustomerLeadsQuery): Promise<number[]> {
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
