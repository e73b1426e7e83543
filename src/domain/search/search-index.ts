import { sql, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { DialectName } from '../../db/database.js';
import { fts5Query, tsQuery } from './query-terms.js';

/**
 * One search interface, two implementations: SQLite FTS5 tables kept by triggers, PostgreSQL
 * tsvector columns with GIN indexes (migration 0010). Each answers a boolean SQL condition on a
 * messages or customers table reference, so callers compose it with their own filters.
 */
export interface SearchIndex {
  messageMatches(terms: string[], alias: string): RawBuilder<SqlBool>;
  customerMatches(terms: string[], alias: string): RawBuilder<SqlBool>;
  /**
   * `query` (over `messages as m`) restricted to messages matching `terms`, newest (highest id)
   * first. SQLite joins its FTS table and walks it in rowid order, so a page stops after its rows
   * instead of sorting every match of the integration (a 1M-message account: ~2 ms, not ~200 ms).
   */
  newestMessages<QB extends SelectQueryBuilder<any, any, any>>(query: QB, terms: string[]): QB;
}

const sqliteIndex: SearchIndex = {
  messageMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.id`)} in (select rowid from messages_fts where messages_fts match ${fts5Query(terms)})`,
  customerMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.id`)} in (select rowid from customers_fts where customers_fts match ${fts5Query(terms)})`,
  newestMessages: (query, terms) =>
    query
      .innerJoin(sql`messages_fts`.as('f'), (join: any) => join.on(sql<SqlBool>`f.rowid = m.id`))
      .where(sql<SqlBool>`messages_fts match ${fts5Query(terms)}`)
      .orderBy(sql`f.rowid`, 'desc') as typeof query,
};

const postgresIndex: SearchIndex = {
  messageMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ to_tsquery('simple'::regconfig, ${tsQuery(terms)})`,
  customerMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ to_tsquery('simple'::regconfig, ${tsQuery(terms)})`,
  newestMessages: (query, terms) => query.where(postgresIndex.messageMatches(terms, 'm')).orderBy('m.id', 'desc') as typeof query,
};

export function searchIndexFor(dialect: DialectName): SearchIndex {
  return dialect === 'postgres' ? postgresIndex : sqliteIndex;
}
