import { sql, type QueryCreator } from 'kysely';
import { dialectOf, executeNamed, type DialectName, type Executor } from '../../db/database.js';
import type { Database, IntegrationRow, LeadRow, MessageRow, SourceRow } from '../../db/schema.js';
import type { IntegrationPart, MessagePart, ProfilePart, SourcePart } from '../conversations/history-message.js';
import { canSeeLeadRow, findVisibleLead, leadScopeSql, type Scope } from '../policy/policy.js';
import { findAccount } from '../accounts/accounts.repo.js';
import { prepared } from '../../db/prepared.js';
import { lookupsById } from '../../db/batch-queue.js';
import { HISTORY_PAGE_SIZE } from './messaging.types.js';

/** SQL of the messaging API: a lead's channels, history pages, idempotency and write-first counts. */

/** The channels of a lead: its customer's channels on the lead's integration, oldest first. */
export async function leadSources(
  db: Executor,
  lead: Pick<LeadRow, 'account_id' | 'customer_id' | 'integration_id'>,
): Promise<SourceRow[]> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('account_id', '=', lead.account_id)
    .where('customer_id', '=', lead.customer_id)
    .where('integration_id', '=', lead.integration_id)
    .orderBy('id')
    .execute();
}

/** What a send reads before it goes out; see {@link visibleSendTarget}. */
export interface SendTarget {
  /** The lead's integration, also when disconnected since. */
  integration: IntegrationRow;
  /** The lead's channels, by id. */
  sources: SourceRow[];
  /** The account's plan (JSON text, accounts/plan.ts): whether it may send. */
  plan: string;
}

/**
 * PostgreSQL: the send targets of several leads of any accounts, by lead id (see `sendTargetById`).
 * The rows travel as `json`, written out as text from the rows, not as `jsonb`, which PostgreSQL
 * builds in its binary form and then writes out: about a third of the statement's time on 18 leads
 * (docs/performance.md).
 */
async function sendTargetsByIds(db: Executor, ids: number[]): Promise<Array<SendTarget & { id: number; lead: LeadRow }>> {
  const query = sql<SendTarget & { id: number; lead: LeadRow }>`select l.id, row_to_json(l) as lead, row_to_json(i) as integration,
      coalesce((select json_agg(s order by s.id) from sources s where s.account_id = l.account_id
        and s.customer_id = l.customer_id and s.integration_id = l.integration_id), '[]'::json) as sources,
      (select a.plan from accounts a where a.id = l.account_id) as plan
    from leads l left join integrations i on i.id = l.integration_id and i.account_id = l.account_id
    where l.id = any(${ids}::bigint[])`.compile(db);
  return executeNamed(db, query);
}

/**
 * PostgreSQL: the send targets of one turn of the event loop in one statement instead of one each
 * (docs/performance.md), as single-lead reads are (policy.ts
 * `leadById`). Callers asking for the same lead in one batch share the row.
 */
const sendTargetById = lookupsById(sendTargetsByIds);

/**
 * The lead `leadId` when the scope sees it (the policy's rule, as `visibleLead`), with its
 * integration (also when disconnected since), its channels and its account's plan; undefined when
 * the scope does not see it. PostgreSQL: one statement (the rows as JSON, which carries every column
 * of these tables as they are read otherwise) shared with the other sends of the same turn, and
 * the scope's rule checked in memory (`canSeeLeadRow`, the rule of `leadScopeSql`);
 * SQLite: the reads in process.
 */
export async function visibleSendTarget(db: Executor, scope: Scope, leadId: number): Promise<(SendTarget & { lead: LeadRow }) | undefined> {
  if (dialectOf(db) === 'sqlite') {
    const lead = await findVisibleLead(db, scope, leadId);
    if (!lead) return undefined;
    const account = await findAccount(db, lead.account_id);
    if (!account) throw new Error(`account ${lead.account_id} not found`);
    return { lead, integration: await integrationOfLead(db, lead), sources: await leadSources(db, lead), plan: account.plan };
  }
  const found = await sendTargetById(db, leadId);
  if (!found || !canSeeLeadRow(scope, found.lead)) return undefined;
  if (!found.integration) throw new Error(`integration ${found.lead.integration_id} of account ${scope.accountId} not found`);
  // Callers of one batch share its rows: each gets copies of its own.
  return {
    lead: { ...found.lead },
    integration: { ...found.integration },
    sources: found.sources.map((s) => ({ ...s })),
    plan: found.plan,
  };
}

/** What a history page needs besides its messages; see `historyTarget`. */
export interface HistoryTarget {
  leadId: number;
  integration: IntegrationPart;
  /** Undefined when the channel is not the lead's. */
  source: SourcePart | undefined;
  /** With a cursor: whether it is the id of a message of this lead on this channel. */
  cursorKnown: boolean;
}

/** The columns of messages a history page shows. */
const PAGE_COLUMNS = [
  'id',
  'created_at',
  'incoming',
  'text',
  'url',
  'attachments',
  'reply_to',
  'preview',
  'user_id',
  'custom_id',
  'profile_id',
  'delivery_status',
  'delivery_error',
] as const;

/** The sender's profile columns a joined page carries with each message. */
const PROFILE_COLUMNS = [
  'p.customer_id as p_customer_id',
  'p.login as p_login',
  'p.avatar as p_avatar',
  'p.type as p_type',
  'p.social_id as p_social_id',
  'p.profile_url as p_profile_url',
] as const;

/** A joined page's columns, in the order {@link targetWithPageQuery} writes each message's values. */
const JOINED_COLUMNS = [...PAGE_COLUMNS, ...PROFILE_COLUMNS.map((c) => c.split(' as ')[1])] as (keyof PageRow)[];

/**
 * In one query: the lead when the scope sees it (the policy's rule), its integration (also when
 * disconnected since: its history stays readable), the channel `realId` when it is the lead's, and
 * whether `cursor` names a message of the lead on that channel. Undefined when the lead is not
 * visible. A history page then costs this, its messages and their senders' profiles.
 *
 * With `withPage` on PostgreSQL, for a scope that sees every lead (the owner, API keys), the page
 * comes in the same statement (`page`; docs/performance.md): a
 * round trip cost this process more than the page's SQL. It is read only when the channel is the
 * lead's and the cursor, when given, is known (otherwise the caller answers the error). Without
 * `page` the caller reads the page itself ({@link historyPageWithProfiles}).
 */
export async function historyTarget(
  db: Executor,
  scope: Scope,
  leadId: number,
  realId: number,
  cursor: number | undefined,
  withPage = false,
): Promise<(HistoryTarget & { page?: PageWithProfiles }) | undefined> {
  const rule = leadScopeSql(scope);
  if (withPage && !rule && dialectOf(db) === 'postgres') {
    const params = { leadId, accountId: scope.accountId, realId };
    const [r] = cursor === undefined ? await targetWithNewestPage(db, params) : await targetWithPageBefore(db, { ...params, cursor });
    if (!r) return undefined;
    return { ...targetOf(r), page: r.page ? withProfiles(pageRows(r.page)) : undefined };
  }
  // Building this query costs more than running it: unrestricted scopes run it compiled once.
  const [r] = rule
    ? await targetQuery(db, leadId, scope.accountId, realId, cursor).where(rule).execute()
    : cursor === undefined
      ? await unrestrictedTarget(db, { leadId, accountId: scope.accountId, realId })
      : await unrestrictedTargetAt(db, { leadId, accountId: scope.accountId, realId, cursor });
  return r ? targetOf(r) : undefined;
}

type TargetRow = Awaited<ReturnType<typeof unrestrictedTarget>>[number];

function targetOf(r: TargetRow): HistoryTarget {
  return {
    leadId: r.lead_id,
    integration: {
      id: r.i_id,
      type: r.i_type,
      login: r.i_login,
      avatar: r.i_avatar,
      identifier: r.i_identifier,
      external_id: r.i_external_id,
    },
    source:
      r.s_id === null
        ? undefined
        : {
            id: r.s_id,
            external_id: r.s_external_id as string,
            name: r.s_name,
            type: r.s_type as string,
            integration_id: r.s_integration_id as number,
            sender: r.s_sender as string,
            token: r.s_token,
            expires_at: r.s_expires_at,
          },
    cursorKnown: r.cursor_known !== null,
  };
}

function targetQuery(db: QueryCreator<Database>, leadId: number, accountId: number, realId: number, cursor: number | undefined) {
  const known =
    cursor === undefined
      ? sql<number | null>`null`
      : sql<number | null>`(select 1 from messages cm where cm.id = ${cursor} and cm.lead_id = leads.id and cm.source_id = sources.id)`;
  return db
    .selectFrom('leads')
    .innerJoin('integrations', (join) =>
      join.onRef('integrations.id', '=', 'leads.integration_id').onRef('integrations.account_id', '=', 'leads.account_id'),
    )
    .leftJoin('sources', (join) =>
      join
        .on('sources.id', '=', realId)
        .onRef('sources.account_id', '=', 'leads.account_id')
        .onRef('sources.customer_id', '=', 'leads.customer_id')
        .onRef('sources.integration_id', '=', 'leads.integration_id'),
    )
    .select([
      'leads.id as lead_id',
      'integrations.id as i_id',
      'integrations.type as i_type',
      'integrations.login as i_login',
      'integrations.avatar as i_avatar',
      'integrations.identifier as i_identifier',
      'integrations.external_id as i_external_id',
      'sources.id as s_id',
      'sources.external_id as s_external_id',
      'sources.name as s_name',
      'sources.type as s_type',
      'sources.integration_id as s_integration_id',
      'sources.sender as s_sender',
      'sources.token as s_token',
      'sources.expires_at as s_expires_at',
      known.as('cursor_known'),
    ])
    .where('leads.id', '=', leadId)
    .where('leads.account_id', '=', accountId);
}

type TargetParams = { leadId: number; accountId: number; realId: number };
const unrestrictedTarget = prepared((db, p: TargetParams) => targetQuery(db, p.leadId, p.accountId, p.realId, undefined));
const unrestrictedTargetAt = prepared((db, p: TargetParams & { cursor: number }) =>
  targetQuery(db, p.leadId, p.accountId, p.realId, p.cursor),
);

/**
 * {@link targetQuery} with the history page of the channel `realId` and its senders' profiles
 * (PostgreSQL, unrestricted scopes), in one row: in `page`, the page's messages as a JSON array of
 * arrays of their values in {@link JOINED_COLUMNS}' order, which this process reads in one native
 * parse where each column of each row cost it a step of the driver's (and without the column
 * names written for every message). `page` is null when the page is not to be read (the channel is
 * not the lead's, or the cursor is unknown), an empty array when it has no message.
 */
function targetWithPageQuery(db: Executor, leadId: number, accountId: number, realId: number, cursor: number | undefined) {
  const readable = cursor === undefined ? sql`t.s_id is not null` : sql`t.s_id is not null and t.cursor_known is not null`;
  const page = pageJoinedQuery(db, leadId, realId, cursor);
  const values = sql.join(JOINED_COLUMNS.map((c) => sql.ref(`x.${c}`)));
  return db
    .with('t', (w) => targetQuery(w, leadId, accountId, realId, cursor))
    .selectFrom('t')
    .selectAll('t')
    .select(
      sql<
        unknown[][] | null
      >`case when ${readable} then (select coalesce(json_agg(json_build_array(${values}) order by x.id desc), '[]') from (${page}) x) end`.as(
        'page',
      ),
    );
}

/** A page's messages from {@link targetWithPageQuery}'s arrays of values. */
function pageRows(page: unknown[][]): PageRow[] {
  return page.map((values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < JOINED_COLUMNS.length; i++) row[JOINED_COLUMNS[i]] = values[i];
    return row as PageRow;
  });
}

const targetWithNewestPage = prepared((db, p: TargetParams) => targetWithPageQuery(db, p.leadId, p.accountId, p.realId, undefined));
const targetWithPageBefore = prepared((db, p: TargetParams & { cursor: number }) =>
  targetWithPageQuery(db, p.leadId, p.accountId, p.realId, p.cursor),
);

/** The integration of a lead, also when it was disconnected since (its history stays readable). */
export async function integrationOfLead(db: Executor, lead: Pick<LeadRow, 'account_id' | 'integration_id'>): Promise<IntegrationRow> {
  return db
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', lead.integration_id)
    .where('account_id', '=', lead.account_id)
    .executeTakeFirstOrThrow();
}

/** The newest message id of the lead per channel: which channel the lead spoke on last. */
export async function latestMessagePerSource(db: Executor, leadId: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('messages')
    .select(['source_id', (eb) => eb.fn.max('id').as('last_id')])
    .where('lead_id', '=', leadId)
    .groupBy('source_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.source_id), Number(r.last_id)]));
}

/** A history page's message: the presenter's columns and the sender's profile. */
export type HistoryRow = MessagePart & Pick<MessageRow, 'profile_id'>;

/**
 * One history page: messages of the lead on the channel, newest first, older than `before` when
 * given. Asks for one more than `limit` so the caller knows whether an earlier page exists. Only
 * the columns the page shows: making row objects was most of this query's time.
 */
export async function historyPage(
  db: Executor,
  leadId: number,
  sourceId: number,
  before: number | undefined,
  limit: number,
): Promise<HistoryRow[]> {
  if (limit === HISTORY_PAGE_SIZE) {
    return before === undefined ? newestPage(db, { leadId, sourceId }) : pageBefore(db, { leadId, sourceId, before });
  }
  return pageQuery(db, leadId, sourceId, before, limit).execute();
}

function pageQuery(db: QueryCreator<Database>, leadId: number, sourceId: number, before: number | undefined, limit: number) {
  let query = db.selectFrom('messages').select(PAGE_COLUMNS).where('lead_id', '=', leadId).where('source_id', '=', sourceId);
  if (before !== undefined) query = query.where('id', '<', before);
  return query.orderBy('id', 'desc').limit(limit + 1);
}

const newestPage = prepared((db, p: { leadId: number; sourceId: number }) =>
  pageQuery(db, p.leadId, p.sourceId, undefined, HISTORY_PAGE_SIZE),
);
const pageBefore = prepared((db, p: { leadId: number; sourceId: number; before: number }) =>
  pageQuery(db, p.leadId, p.sourceId, p.before, HISTORY_PAGE_SIZE),
);

/** A history page with its incoming messages' senders' profiles, by profile id. */
export interface PageWithProfiles {
  rows: HistoryRow[];
  profiles: Map<number, ProfilePart>;
}

/**
 * {@link historyPage} and the profiles of its incoming messages' senders ({@link profilesByIds}).
 * PostgreSQL: one round trip, each message carrying its sender's profile columns (a join of the
 * page); SQLite: the two reads in process.
 */
export async function historyPageWithProfiles(
  db: Executor,
  leadId: number,
  sourceId: number,
  before: number | undefined,
  limit: number,
): Promise<PageWithProfiles> {
  if (dialectOf(db) === 'sqlite' || limit !== HISTORY_PAGE_SIZE) {
    const rows = await historyPage(db, leadId, sourceId, before, limit);
    const ids = [...new Set(rows.flatMap((m) => (m.incoming && m.profile_id !== null ? [m.profile_id] : [])))];
    return { rows, profiles: await profilesByIds(db, ids) };
  }
  return withProfiles(
    before === undefined ? await newestPageJoined(db, { leadId, sourceId }) : await pageBeforeJoined(db, { leadId, sourceId, before }),
  );
}

/** A joined page's message with its sender's profile columns (null when it has none). */
type PageRow = HistoryRow & {
  p_customer_id: number | null;
  p_login: string | null;
  p_avatar: string | null;
  p_type: string | null;
  p_social_id: string | null;
  p_profile_url: string | null;
};

/** A joined page split into its messages and their incoming senders' profiles. */
function withProfiles(joined: PageRow[]): PageWithProfiles {
  const profiles = new Map<number, ProfilePart>();
  const rows = joined.map(({ p_customer_id, p_login, p_avatar, p_type, p_social_id, p_profile_url, ...row }) => {
    if (row.incoming && row.profile_id !== null && p_customer_id !== null && !profiles.has(row.profile_id)) {
      profiles.set(row.profile_id, {
        id: row.profile_id,
        customer_id: p_customer_id,
        login: p_login as string,
        avatar: p_avatar as string,
        type: p_type as string,
        social_id: p_social_id as string,
        profile_url: p_profile_url as string,
      });
    }
    return row;
  });
  return { rows, profiles };
}

function pageJoinedQuery(db: QueryCreator<Database>, leadId: number, sourceId: number, before: number | undefined) {
  return db
    .with('page', (w) => pageQuery(w, leadId, sourceId, before, HISTORY_PAGE_SIZE))
    .selectFrom('page')
    .leftJoin('profiles as p', 'p.id', 'page.profile_id')
    .selectAll('page')
    .select(PROFILE_COLUMNS)
    .orderBy('page.id', 'desc');
}

const newestPageJoined = prepared((db, p: { leadId: number; sourceId: number }) => pageJoinedQuery(db, p.leadId, p.sourceId, undefined));
const pageBeforeJoined = prepared((db, p: { leadId: number; sourceId: number; before: number }) =>
  pageJoinedQuery(db, p.leadId, p.sourceId, p.before),
);

/** The senders' profiles of a history page, by id (usually one: the customer's). */
export async function profilesByIds(db: Executor, ids: number[]): Promise<Map<number, ProfilePart>> {
  if (!ids.length) return new Map();
  const [only] = ids;
  const rows =
    ids.length === 1 && only !== undefined
      ? await profileById(db, { profileId: only })
      : await profilesQuery(db).where('id', 'in', ids).execute();
  return new Map(rows.map((p) => [p.id, p]));
}

const profilesQuery = (db: Executor) =>
  db.selectFrom('profiles').select(['id', 'customer_id', 'login', 'avatar', 'type', 'social_id', 'profile_url']);
const profileById = prepared((db, p: { profileId: number }) => profilesQuery(db).where('id', '=', p.profileId));

export async function messageOfLead(db: Executor, leadId: number, id: number): Promise<MessageRow | undefined> {
  return db.selectFrom('messages').selectAll().where('id', '=', id).where('lead_id', '=', leadId).executeTakeFirst();
}

/** Messages a send with this `customId` stored in the lead (index messages_custom_idx). */
export async function messagesByCustomId(db: Executor, leadId: number, customId: string): Promise<MessageRow[]> {
  return db.selectFrom('messages').selectAll().where('lead_id', '=', leadId).where('custom_id', '=', customId).orderBy('id').execute();
}

export async function sourcesByIds(db: Executor, ids: number[]): Promise<Map<number, SourceRow>> {
  if (!ids.length) return new Map();
  const rows = await db.selectFrom('sources').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((s) => [s.id, s]));
}

/** The lead row inside a transaction, locked on PostgreSQL so concurrent messages update it in turn. */
export async function lockLead(db: Executor, dialect: DialectName, id: number): Promise<LeadRow> {
  let query = db.selectFrom('leads').selectAll().where('id', '=', id);
  if (dialect === 'postgres') query = query.forUpdate();
  return query.executeTakeFirstOrThrow();
}

/** Serializes write-first reservations of one integration (PostgreSQL; SQLite transactions already are). */
export async function lockIntegration(db: Executor, dialect: DialectName, id: number): Promise<void> {
  if (dialect === 'postgres') await db.selectFrom('integrations').select('id').where('id', '=', id).forUpdate().execute();
}

/** The customer's newest `message` channel on an integration. */
export async function latestMessageSource(db: Executor, customerId: number, integrationId: number): Promise<SourceRow | undefined> {
  return db
    .selectFrom('sources')
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('integration_id', '=', integrationId)
    .where('type', '=', 'message')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function isWriteFirstContact(db: Executor, integrationId: number, socialId: string): Promise<boolean> {
  const row = await db
    .selectFrom('write_first_contacts')
    .select('id')
    .where('integration_id', '=', integrationId)
    .where('social_id', '=', socialId)
    .executeTakeFirst();
  return !!row;
}

export async function countWriteFirstContacts(db: Executor, integrationId: number, day: number): Promise<number> {
  const row = await db
    .selectFrom('write_first_contacts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('integration_id', '=', integrationId)
    .where('day', '=', day)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertWriteFirstContact(
  db: Executor,
  values: { accountId: number; integrationId: number; socialId: string; day: number; now: number },
): Promise<number> {
  const row = await db
    .insertInto('write_first_contacts')
    .values({
      account_id: values.accountId,
      integration_id: values.integrationId,
      social_id: values.socialId,
      day: values.day,
      created_at: values.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export async function deleteWriteFirstContact(db: Executor, id: number): Promise<void> {
  await db.deleteFrom('write_first_contacts').where('id', '=', id).execute();
}

/**
 * The customer of the account with this (E.164) phone who has the newest lead on the integration:
 * whom a write first to that phone continues (docs/api/search.md "Write first"). Migration 0106's
 * index `customers (account_id, phone)` finds them.
 */
export async function customerByPhoneOnIntegration(db: Executor, accountId: number, integrationId: number, phone: string) {
  const row = await db
    .selectFrom('customers as c')
    .innerJoin('leads as l', 'l.customer_id', 'c.id')
    .select('c.id')
    .where('c.account_id', '=', accountId)
    .where('c.phone', '=', phone)
    .where('l.integration_id', '=', integrationId)
    .orderBy('l.id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.id;
}
