/** Most words a query may use; more are ignored (a query is a few words, not a document). */
const MAX_TERMS = 8;

/**
 * The words of a search query as both indexes tokenize text: runs of letters and digits, lower
 * case, accents removed. Everything else — quotes, `*`, `:`, `&`, `|`, `!`, `NEAR` as syntax — is a
 * separator, so user input never reaches the FTS query language.
 */
export function queryTerms(q: string): string[] {
  const folded = q
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();
  const words = folded.match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, MAX_TERMS);
}

/** FTS5 query: every term as a quoted prefix term, all required. */
export function fts5Query(terms: string[]): string {
  return terms.map((t) => `"${t}"*`).join(' ');
}

/** FTS5 query matching any of `alternatives`, each a list of terms all required. */
export function fts5AnyQuery(alternatives: string[][]): string {
  return alternatives.length === 1 ? fts5Query(alternatives[0]) : alternatives.map((a) => `(${fts5Query(a)})`).join(' OR ');
}

/** PostgreSQL tsquery text: every term as a prefix, all required. Terms hold letters and digits only. */
export function tsQuery(terms: string[]): string {
  return terms.map((t) => `${t}:*`).join(' & ');
}

/** PostgreSQL tsquery text matching any of `alternatives`, each a list of terms all required. */
export function tsAnyQuery(alternatives: string[][]): string {
  return alternatives.length === 1 ? tsQuery(alternatives[0]) : alternatives.map((a) => `(${tsQuery(a)})`).join(' | ');
}
