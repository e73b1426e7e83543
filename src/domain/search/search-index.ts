import { sql, type RawBuilder, type SqlBool } from 'kysely';
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
}

const sqliteIndex: SearchIndex = {
  messageMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.id`)} in (select rowid from messages_fts where messages_fts match ${fts5Query(terms)})`,
  customerMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.id`)} in (select rowid from customers_fts where customers_fts match ${fts5Query(terms)})`,
};

const postgresIndex: SearchIndex = {
  messageMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ to_tsquery('simple'::regconfig, ${tsQuery(terms)})`,
  customerMatches: (terms, alias) =>
    sql<SqlBool>`${sql.ref(`${alias}.search_tsv`)} @@ to_tsquery('simple'::regconfig, ${tsQuery(terms)})`,
};

export function searchIndexFor(dialect: DialectName): SearchIndex {
  return dialect === 'postgres' ? postgresIndex : sqliteIndex;
}
