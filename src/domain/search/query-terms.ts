import { searchWords, wordStem } from './search-text.js';

/** Most words a query may use; more are ignored (a query is a few words, not a document). */
const MAX_TERMS = 8;

/**
 * The words of a search query, normalized as the indexes normalize text (search-text.ts): runs of
 * letters and digits. Everything else — quotes, `*`, `:`, `&`, `|`, `!`, `NEAR` as syntax — is a
 * separator, so user input never reaches the FTS query language.
 */
export function queryTerms(q: string): string[] {
  return [...new Set(searchWords(q))].slice(0, MAX_TERMS);
}

/**
 * A message search's words and which of its two tiers is asked (docs/api/messaging.md "Search"):
 * `exact`, every term a prefix of a word as written; `forms`, every term a prefix of a word or the
 * same stem as a word, and not `exact` (those rank first).
 */
export interface WordQuery {
  terms: string[];
  tier: 'exact' | 'forms';
}

const fts5Exact = (terms: string[]) => terms.map((t) => `words : "${t}"*`).join(' AND ');

/** FTS5 query of a message search over `messages_fts (words, stems)` (migration 0105). */
export function fts5MessageQuery(q: WordQuery): string {
  if (q.tier === 'exact') return fts5Exact(q.terms);
  // The stems column holds a word's stem only where it differs from the word (searchStems), so a
  // word that is its own stem is found in `words`.
  const forms = q.terms
    .map((t) => {
      const stem = wordStem(t);
      return `(words : "${t}"* OR stems : "${stem}" OR words : "${stem}")`;
    })
    .join(' AND ');
  return `(${forms}) NOT (${fts5Exact(q.terms)})`;
}

/**
 * PostgreSQL: the text `parley_message_query` (migration 0105) makes a message search's tsquery
 * of, which stems the terms with the database's own Snowball dictionaries.
 */
export function pgMessageQuery(q: WordQuery): string {
  return `${q.tier} ${q.terms.join(' ')}`;
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
