import type BetterSqlite3 from 'better-sqlite3';
import { phoneWords, searchStems, searchText } from '../domain/search/search-text.js';

/**
 * The SQL functions SQLite's search triggers call (migrations 0010, 0105, 0106); PostgreSQL has SQL
 * functions of the same names. `parley_search_text` and `parley_search_stems` are the normalization
 * of src/domain/search/search-text.ts, the one both databases index and query through.
 */
export function registerSearchFunctions(native: BetterSqlite3.Database): void {
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  native.function('parley_digits', { deterministic: true }, (value: unknown) => text(value).replace(/[^0-9]/g, ''));
  native.function('parley_search_text', { deterministic: true }, (value: unknown) => searchText(text(value)));
  native.function('parley_search_stems', { deterministic: true }, (value: unknown) => searchStems(text(value)));
  native.function('parley_phone_words', { deterministic: true }, (value: unknown) => phoneWords(text(value)));
}
