import { sql, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { fts5AnyQuery, fts5MessageQuery, pgMessageQuery, tsAnyQuery, type WordQuery } from './query-terms.js';

/**
 * One search interface, two implementations: SQLite FTS5 tables kept by triggers, with prefix
 * indexes (migrations 0010, 0015, 0105: words and their stems), PostgreSQL tsvectors with GIN indexes: the customers' a column
 * (0010) copied to each lead in `lead_words` (0070), the messages' in `message_words` (0071). Each
 * answers a boolean SQL condition on a table reference, so callers compose it with their own
 * filters.
 */
export interface SearchIndex {
  /** Messages matching `words`: `alias` over messages (SQLite), over message_words (PostgreSQL). */
  messageMatches(words: WordQuery, alias: string): RawBuilder<SqlBool>;
  /** The query `words` make, as the text {@link messageMatchesEachRow} takes. */
  messageQuery(words: WordQuery): string;
  /**
   * The same condition for a statement PostgreSQL may keep a plan of and that tests it row by row:
   * the words' query is computed once per run (an InitPlan), where in a kept plan `to_tsquery($n)`
   * would be computed again for every row (~2 us each). The index cannot be planned from it.
   * `query` is {@link messageQuery}'s text, or a prepared statement's parameter (db/prepared.ts).
   */
  messageMatchesEachRow(query: unknown, alias: string): RawBuilder<SqlBool>;
  /**
   * Customers (`alias` over customers) matching any of `alternatives`, each a list of words all
   * required: one index query, however many alternatives (SQLite planned `a in (...) or b in (...)`
   * as a scan of every customer of the account, ~20 ms at 100k).
   */
  customerMatches(alternatives: string[][], alias: string): RawBuilder<SqlBool>;
  /** The words' query `alternatives` make, as the text {@link customerMatchesEachRow} takes. */
  customerQuery(alternatives: string[][]): string;
  /**
   * The same condition computed once per run (an InitPlan), as {@link messageMatchesEachRow}, for
   * {@link customerQuery}'s text or a prepared statement's parameter. On PostgreSQL `alias` may
   * also be `lead_words` (migration 0070), which holds the customers' words.
   */
  customerMatchesEachRow(query: unknown, alias: string): RawBuilder<SqlBool>;
  /** The same customers, of every account (callers restrict), as a subquery of one column `id`. */
  customerIds(alternatives: string[][]): RawBuilder<{ id: number }>;
  /**
   * `query` (over `messages as m`) restricted to messages matching `words`, newest (highest id)
   * first. SQLite joins its FTS table and walks it in rowid order, so a page stops after its rows
   * instead of sorting every match of the integration (a 1M-message account: ~2 ms, not ~200 ms).
   */
  // biome-ignore lint/suspicious/noExplicitAny: any select over `messages as m`, whatever else it joins or selects
  newestMessages<QB extends SelectQueryBuilder<any, any, any>>(query: QB, words: WordQuery): QB;
}

/** SQLite: the customers matching an FTS5 query's text, as a subquery of one column `id`. */
const sqliteCustomerIds = (query: unknown) => sql<{ id: number }>`select rowid as id from customers_fts where customers_fts match ${query}`;

const sqliteIndex: SearchIndex = {
  messageMatches: (words, alias) => sqliteIndex.messageMatchesEachRow(fts5MessageQuery(words), alias),
  messageQuery: fts5MessageQuery,
  messageMatchesEachRow: (query, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.id`)} in (select rowid from messages_fts where messages_fts match ${query})`,
  customerMatches: (alternatives, alias) => sql<SqlBool>`${sql.ref(`${alias}.id`)} in (${sqliteIndex.customerIds(alternatives)})`,
  customerQuery: fts5AnyQuery,
  customerMatchesEachRow: (query, alias) => sql<SqlBool>`${sql.ref(`${alias}.id`)} in (${sqliteCustomerIds(query)})`,
  customerIds: (alternatives) => sqliteCustomerIds(fts5AnyQuery(alternatives)),
  newestMessages: (query, words) =>
    query
      // biome-ignore lint/suspicious/noExplicitAny: the join builder of a generic QB has no nameable type
      .innerJoin(sql`messages_fts`.as('f'), (join: any) => join.on(sql<SqlBool>`f.rowid = m.id`))
      .where(sql<SqlBool>`messages_fts match ${fts5MessageQuery(words)}`)
      .orderBy(sql`f.rowid`, 'desc') as typeof query,
};

const postgresIndex: SearchIndex = {
  messageMatches: (words, alias) => sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ parley_message_query(${pgMessageQuery(words)})`,
  messageQuery: pgMessageQuery,
  messageMatchesEachRow: (query, alias) => sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ (select parley_message_query(${query}))`,
  customerMatches: (alternatives, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ to_tsquery('simple'::regconfig, ${tsAnyQuery(alternatives)})`,
  customerQuery: tsAnyQuery,
  customerMatchesEachRow: (query, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ (select to_tsquery('simple'::regconfig, ${query}))`,
  customerIds: (alternatives) =>
    sql<{ id: number }>`select id from customers where search_tsv @@ to_tsquery('simple'::regconfig, ${tsAnyQuery(alternatives)})`,
  newestMessages: (query, words) =>
    query
      // biome-ignore lint/suspicious/noExplicitAny: the join builder of a generic QB has no nameable type
      .innerJoin(sql`message_words`.as('mw'), (join: any) =>
        join.on(sql<SqlBool>`mw.integration_id = m.integration_id and mw.message_id = m.id`),
      )
      .where(postgresIndex.messageMatches(words, 'mw'))
      .orderBy('m.id', 'desc') as typeof query,
};

export function searchIndexFor(dialect: DialectName): SearchIndex {
  return dialect === 'postgres' ? postgresIndex : sqliteIndex;
}
