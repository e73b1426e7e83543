import type { Deps } from '../context.js';
import type { AuthContext } from '../auth/auth-context.js';
import { invalid, notFound } from '../errors.js';
import { canUseIntegration, leadScopeSql, scopeOf } from '../policy/policy.js';
import { integrationTypeInfo, type SourceType } from '../channels/integration-types.js';
import { queryTerms, type WordQuery } from './query-terms.js';
import { searchIndexFor, type SearchIndex } from './search-index.js';
import * as repo from './search.repo.js';
import { phoneDigits } from '../customers/phone.js';
import { defaultCountryOf } from '../accounts/account-settings.js';
import { entriesByIds } from '../leads/leads.repo.js';
import type { LeadListEntry } from '../leads/leads.types.js';

export const PAGE_SIZE = 20;
/** A query that may be a phone number: digits and what people type between them. */
const PHONE_LIKE = /^[\s+()\-.0-9]+$/;
export const MAX_QUERY_LENGTH = 200;
/**
 * Customer search on SQLite: above this many matching customers, walking the account's leads newest
 * first beats joining each match to its leads (measured crossover ~350 at 100k leads; 500 bounds
 * either plan near 1 ms there).
 */
export const MANY_CUSTOMER_MATCHES = 500;

/** Search groups channels as the search cursors do (docs/api/messaging.md "Search"): direct messages, and comments of any kind. */
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

/** Message and customer search within what the caller may see (docs/api/auth.md). */
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
    const integration = await repo.searchTarget(db, auth.accountId, integrationId, GROUP_SOURCE_TYPES);
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
      // Without a channel of the group, searching it would walk every match of the words to find
      // none (~50 ms, seconds for a common word, on a 1M-message account).
      if (from === -1 || !terms.length || !integration.channels.has(group)) {
        out.push({ type: group, cursor: -1 });
        continue;
      }
      const rows = await this.rankedPage(auth.accountId, integration.id, group, terms, from, leadScopeSql(scope));
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
    const db = this.deps.db.kysely;
    const terms = this.terms(q);
    // Phone numbers are indexed as digit runs: "+7 (916) 123-45-67" also searches as one number.
    const digits = q.replace(/[^0-9]/g, '');
    const scope = await scopeOf(db, auth);
    const from = cursor === undefined ? undefined : parseCursor(cursor);
    if (from === -1) return { cursor: -1, leads: [] };
    if (from !== undefined && !(await repo.isLeadOf(db, auth.accountId, from))) throw invalid('Unknown cursor');
    if (!terms.length) return { cursor: -1, leads: [] };

    const alternatives = digits.length >= 5 && terms.length > 1 ? [terms, [digits]] : [terms];
    // A phone number in any form also searches as the E.164 number it is in the account's country
    // ("8 (916) 123-45-67" finds +79161234567; docs/api/search.md "Phones").
    const e164 = PHONE_LIKE.test(q) && digits.length >= 5 ? phoneDigits(q, await defaultCountryOf(this.deps, auth.accountId)) : undefined;
    if (e164 && e164 !== digits) alternatives.push([e164]);
    const query = { accountId: auth.accountId, alternatives, beforeId: from, limit: PAGE_SIZE + 1, rule: leadScopeSql(scope) };
    // PostgreSQL walks a bounded window of the newest leads, then takes the older matching leads
    // from the GIN index of `lead_words`, and reads the page's entries in the same statement
    // (search.repo.ts). SQLite usually drives the query from the index match (the matching
    // customers, then their leads by leads_customer_idx, then the newest 21): its cost follows the
    // number of matches. Walking the account's leads newest first and testing each one's customer
    // instead costs up to every lead of the account when the words match few customers (the usual
    // search for one person), so SQLite walks only when they match many: joining every match to its
    // leads and sorting them costs ~1 us per match (`example`: 40k customers, ~35 ms at 100k),
    // while the walk stops at the page (2-5 ms).
    if (this.deps.db.dialect === 'postgres') {
      const leads = await repo.customerLeadsWalking(db, this.index, query);
      const page = leads.slice(0, PAGE_SIZE);
      return { cursor: leads.length > PAGE_SIZE ? page[page.length - 1].lead.id : -1, leads: page };
    }
    const many = await repo.customerMatchesExceed(db, this.index, auth.accountId, alternatives, MANY_CUSTOMER_MATCHES);
    const ids = await repo.customerLeadIds(db, this.index, many ? 'walk-leads' : 'join', query);
    const page = ids.slice(0, PAGE_SIZE);
    const entries = new Map((await entriesByIds(db, page)).map((e) => [e.lead.id, e]));
    return { cursor: ids.length > PAGE_SIZE ? page[page.length - 1] : -1, leads: page.flatMap((id) => entries.get(id) ?? []) };
  }

  /**
   * One page of a group's matches, `PAGE_SIZE + 1` rows to tell whether more follow: the messages
   * with every word as written (the `exact` tier) newest first, then those that match only through
   * a word form (`forms`) newest first. A cursor is the last message handed out; its tier is found
   * again by testing it against the exact words.
   */
  private async rankedPage(
    accountId: number,
    integrationId: number,
    group: SearchGroup,
    terms: string[],
    from: number | undefined,
    rule: ReturnType<typeof leadScopeSql>,
  ) {
    const db = this.deps.db.kysely;
    const pageOf = this.deps.db.dialect === 'postgres' ? repo.messagePageWalking : repo.messagePage;
    const exact: WordQuery = { terms, tier: 'exact' };
    const ask = (words: WordQuery, beforeId: number | undefined, limit: number) =>
      pageOf(db, this.index, { accountId, integrationId, sourceTypes: GROUP_SOURCE_TYPES[group], words, beforeId, limit, rule });
    const inExactTier = from === undefined || (await repo.messageMatches(db, this.index, integrationId, from, exact));
    const rows = inExactTier ? await ask(exact, from, PAGE_SIZE + 1) : [];
    if (rows.length > PAGE_SIZE) return rows;
    return rows.concat(await ask({ terms, tier: 'forms' }, inExactTier ? undefined : from, PAGE_SIZE + 1 - rows.length));
  }

  private async assertIssued(integrationId: number, group: SearchGroup, messageId: number): Promise<void> {
    if (!(await repo.isMessageOf(this.deps.db.kysely, integrationId, GROUP_SOURCE_TYPES[group], messageId)))
      throw invalid('Unknown cursor');
  }
}
