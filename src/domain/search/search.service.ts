import { sql, type SqlBool } from 'kysely';
import type { Deps } from '../context.js';
import type { AuthContext } from '../auth/auth.service.js';
import { invalid, notFound } from '../errors.js';
import { canUseIntegration, leadScopeSql, scopeOf } from '../policy/policy.js';
import { integrationTypeInfo, type SourceType } from '../../channels/integration-types.js';
import { queryTerms } from './query-terms.js';
import { searchIndexFor, type SearchIndex } from './search-index.js';
import { entriesByIds } from '../leads/leads.repo.js';
import type { LeadListEntry } from '../leads/leads.types.js';

export const PAGE_SIZE = 20;
export const MAX_QUERY_LENGTH = 200;
/**
 * Customer search on SQLite: above this many matching customers, walking the account's leads newest
 * first beats joining each match to its leads (measured crossover ~350 at 100k leads; 500 bounds
 * either plan near 1 ms there).
 */
export const MANY_CUSTOMER_MATCHES = 500;

/** Search groups channels as api.md's cursors do: direct messages, and comments of any kind. */
export type SearchGroup = 'message' | 'comment';
const GROUP_SOURCE_TYPES: Record<SearchGroup, SourceType[]> = {
  message: ['message'],
  comment: ['comment', 'photo', 'video', 'market'],
};

export interface MessageHit {
  type: SearchGroup;
  messageId: number;
  leadId: number;
  senderId: number;
  sourceId: number;
  text: string;
  /** Unix milliseconds. */
  at: number;
}

export interface GroupCursor {
  type: SearchGroup;
  /** Id of the last message handed out, or -1 when the group is exhausted. */
  cursor: number;
}

/** `cursor` as a client sends it back: number or numeric string; -1 means "exhausted". */
export function parseCursor(value: string | number): number {
  const n = typeof value === 'number' ? value : /^-?\d{1,16}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || (n < 1 && n !== -1)) throw invalid('Unknown cursor');
  return n;
}

/** Message and customer search within what the caller may see (decisions.md §2). */
export class SearchService {
  private readonly index: SearchIndex;

  constructor(private readonly deps: Deps) {
    this.index = searchIndexFor(deps.db.dialect);
  }

  private terms(q: string): string[] {
    const trimmed = q.trim();
    if (!trimmed) throw invalid('q must not be empty', [{ path: 'body.q', message: 'must not be empty' }]);
    if (trimmed.length > MAX_QUERY_LENGTH) throw invalid(`q is longer than ${MAX_QUERY_LENGTH} characters`);
    return queryTerms(trimmed);
  }

  /**
   * Messages of one integration whose text has every word of `q` (as word prefixes), newest first,
   * paged per group with a cursor each. A group whose cursor is -1 stays exhausted.
   */
  async messages(
    auth: AuthContext,
    integrationId: number,
    q: string,
    cursors: Array<{ type: string; cursor: string | number }> | undefined,
  ): Promise<{ cursors: GroupCursor[]; hits: MessageHit[] }> {
    const db = this.deps.db.kysely;
    const terms = this.terms(q);
    const scope = await scopeOf(db, auth);
    const integration = await db
      .selectFrom('integrations')
      .select(['id', 'type'])
      .where('id', '=', integrationId)
      .where('account_id', '=', auth.accountId)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();
    if (!integration || !canUseIntegration(scope, integration.id)) throw notFound('Integration not found');

    const offered = (Object.keys(GROUP_SOURCE_TYPES) as SearchGroup[]).filter((g) =>
      GROUP_SOURCE_TYPES[g].some((t) => integrationTypeInfo(integration.type)?.sourceTypes.includes(t)),
    );
    const after = new Map<SearchGroup, number>();
    for (const c of cursors ?? []) {
      if (!offered.includes(c.type as SearchGroup)) throw invalid(`Unknown cursor type ${c.type}`);
      const value = parseCursor(c.cursor);
      if (value !== -1) await this.assertIssued(integration.id, c.type as SearchGroup, value);
      after.set(c.type as SearchGroup, value);
    }

    const out: GroupCursor[] = [];
    const hits: MessageHit[] = [];
    for (const group of offered) {
      const from = after.get(group);
      if (from === -1 || !terms.length || !(await this.hasChannels(integration.id, group))) {
        out.push({ type: group, cursor: -1 });
        continue;
      }
      let query = db
        .selectFrom('messages as m')
        .innerJoin('sources as s', 's.id', 'm.source_id')
        .innerJoin('leads', 'leads.id', 'm.lead_id')
        .select(['m.id', 'm.lead_id', 'm.profile_id', 'm.user_id', 'm.source_id', 'm.text', 'm.created_at'])
        .where('m.integration_id', '=', integration.id)
        .where('m.account_id', '=', auth.accountId)
        .where('s.type', 'in', GROUP_SOURCE_TYPES[group])
        .limit(PAGE_SIZE + 1);
      query = this.index.newestMessages(query, terms);
      if (from !== undefined) query = query.where('m.id', '<', from);
      const rule = leadScopeSql(scope);
      if (rule) query = query.where(rule);
      const rows = await query.execute();
      const page = rows.slice(0, PAGE_SIZE);
      for (const r of page) {
        hits.push({
          type: group,
          messageId: r.id,
          leadId: r.lead_id,
          senderId: r.profile_id ?? r.user_id ?? 0,
          sourceId: r.source_id,
          text: r.text,
          at: r.created_at,
        });
      }
      out.push({ type: group, cursor: rows.length > PAGE_SIZE ? page[page.length - 1].id : -1 });
    }
    return { cursors: out, hits };
  }

  /**
   * Leads whose customer matches `q` by name, login, e-mail or phone digits, newest lead first, in
   * pages of 20, as lead list entries.
   */
  async customers(auth: AuthContext, q: string, cursor: string | number | undefined): Promise<{ cursor: number; leads: LeadListEntry[] }> {
    const { cursor: next, leadIds } = await this.customerLeadIds(auth, q, cursor);
    const entries = new Map((await entriesByIds(this.deps.db.kysely, leadIds)).map((e) => [e.lead.id, e]));
    return { cursor: next, leads: leadIds.flatMap((id) => entries.get(id) ?? []) };
  }

  private async customerLeadIds(auth: AuthContext, q: string, cursor: string | number | undefined): Promise<{ cursor: number; leadIds: number[] }> {
    const db = this.deps.db.kysely;
    const terms = this.terms(q);
    // Phone numbers are indexed as digit runs: "+7 (916) 123-45-67" also searches as one number.
    const digits = q.replace(/[^0-9]/g, '');
    const scope = await scopeOf(db, auth);
    const from = cursor === undefined ? undefined : parseCursor(cursor);
    if (from === -1) return { cursor: -1, leadIds: [] };
    if (from !== undefined) {
      const issued = await db.selectFrom('leads').select('id').where('id', '=', from).where('account_id', '=', auth.accountId).executeTakeFirst();
      if (!issued) throw invalid('Unknown cursor');
    }
    if (!terms.length) return { cursor: -1, leadIds: [] };

    const alternatives = digits.length >= 5 && terms.length > 1 ? [terms, [digits]] : [terms];
    const matches = this.index.customerMatches(alternatives, 'c');
    // Both dialects drive this query from the index match (the matching customers, then their leads
    // by leads_customer_idx, then the newest 21): its cost follows the number of matches. Walking
    // the account's leads newest first and testing each one's customer instead costs up to every
    // lead of the account when the words match few customers (the usual search for one person);
    // SQLite walks only when they match many (below).
    let query =
      this.deps.db.dialect === 'postgres'
        ? // PostgreSQL estimates prefix matches outside its statistics at 0.5% of the customers, so
          // with a join it walks leads_pkey backwards (100-350 ms for a name of one customer at
          // 100k leads: issue 9). The matching ids as an array (an InitPlan) hide that estimate.
          db
            .selectFrom('leads')
            .select('leads.id')
            .where('leads.account_id', '=', auth.accountId)
            .where(
              sql<SqlBool>`leads.customer_id = any(array(${db
                .selectFrom('customers as c')
                .select('c.id')
                .where('c.account_id', '=', auth.accountId)
                .where(matches)}))`,
            )
        : (await this.manyCustomersMatch(auth.accountId, alternatives))
          ? // SQLite, when more than MANY_CUSTOMER_MATCHES customers of the account match (a mail
            // domain, a common name or number prefix): joining every match to its leads and sorting
            // them costs ~1 us per match (`example`: 40k customers, ~35 ms at 100k; issue 9), while
            // walking the leads newest first, each tested against the matches, stops at the page
            // (2-5 ms). The walk goes through every account's leads by id, so it is only chosen
            // when this account's matches are many.
            db
              .selectFrom('leads')
              .select('leads.id')
              .where(sql`+leads.account_id`, '=', auth.accountId)
              .where(sql<SqlBool>`+leads.customer_id in (${this.index.customerIds(alternatives)})`)
              .where((eb) =>
                eb.exists(eb.selectFrom('customers as c').select('c.id').whereRef('c.id', '=', 'leads.customer_id').where('c.account_id', '=', auth.accountId)),
              )
          : db
              .selectFrom('leads')
              .innerJoin('customers as c', 'c.id', 'leads.customer_id')
              .select('leads.id')
              // Unary plus: SQLite must not drive this query by the account's lead index (it would
              // walk all of the account's leads, ~250 ms at 100k).
              .where(sql`+leads.account_id`, '=', auth.accountId)
              .where('c.account_id', '=', auth.accountId)
              .where(matches);
    query = query.orderBy('leads.id', 'desc').limit(PAGE_SIZE + 1);
    if (from !== undefined) query = query.where('leads.id', '<', from);
    const rule = leadScopeSql(scope);
    if (rule) query = query.where(rule);
    const rows = await query.execute();
    const page = rows.slice(0, PAGE_SIZE).map((r) => r.id);
    return { cursor: rows.length > PAGE_SIZE ? page[page.length - 1] : -1, leadIds: page };
  }

  /**
   * SQLite: whether more than MANY_CUSTOMER_MATCHES customers of the account match. The index match
   * drives it, each match is checked in customers_account_idx (not the table: fewer pages), and it
   * stops at the threshold (~0.3 ms).
   */
  private async manyCustomersMatch(accountId: number, alternatives: string[][]): Promise<boolean> {
    const { rows } = await sql<{ n: number }>`select count(*) as n from (select 1 from (${this.index.customerIds(alternatives)}) as m
      where exists (select 1 from customers as c where c.account_id = ${accountId} and c.id = m.id)
      limit ${sql.lit(MANY_CUSTOMER_MATCHES + 1)})`.execute(this.deps.db.kysely);
    return rows[0].n > MANY_CUSTOMER_MATCHES;
  }

  /**
   * Whether the integration has any channel of the group. Without one the group is exhausted at
   * once; searching it would walk every match of the words in the index to find none (~50 ms,
   * seconds for a common word, on a 1M-message account: issue 9).
   */
  private async hasChannels(integrationId: number, group: SearchGroup): Promise<boolean> {
    const row = await this.deps.db.kysely
      .selectFrom('sources')
      .select('id')
      .where('integration_id', '=', integrationId)
      .where('type', 'in', GROUP_SOURCE_TYPES[group])
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  private async assertIssued(integrationId: number, group: SearchGroup, messageId: number): Promise<void> {
    const row = await this.deps.db.kysely
      .selectFrom('messages as m')
      .innerJoin('sources as s', 's.id', 'm.source_id')
      .select('m.id')
      .where('m.id', '=', messageId)
      .where('m.integration_id', '=', integrationId)
      .where('s.type', 'in', GROUP_SOURCE_TYPES[group])
      .executeTakeFirst();
    if (!row) throw invalid('Unknown cursor');
  }
}
