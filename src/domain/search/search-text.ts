import { stemmer as russianStem } from '@orama/stemmers/russian';
import englishStem from 'wink-porter2-stemmer';

/**
 * The one normalization of searched text (docs/architecture.md "Search text"): index and query
 * both go through it, on SQLite as the SQL function `parley_search_text` (db/search-functions.ts)
 * and on PostgreSQL as the function of the same name, which mirrors these steps in SQL (migration
 * 0105 `searchTextSql`; test/search-text.test.ts feeds the same strings through both):
 *
 * 1. compatibility decomposition (NFKD): "ﬁ" is "fi", "é" is "e" + U+0301, "й" is "и" + U+0306;
 * 2. "и" + U+0306 is put back together as "й": a letter of its own in Russian, never a diacritic;
 * 3. the combining diacritical marks are removed: accents go, "ё" becomes "е";
 * 4. lower case;
 * 5. anything that is not a letter or a digit separates words.
 */
export function searchText(text: string): string {
  // SQLite's insert trigger asks for a message's words and then its stems (searchStems): the same
  // text twice in a row, normalized once.
  if (text === lastText) return lastNormalized;
  lastNormalized = normalize(text);
  lastText = text;
  return lastNormalized;
}

let lastText = '';
let lastNormalized = '';

function normalize(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/и\u0306/g, 'й')
    .replace(/И\u0306/g, 'Й')
    .replace(COMBINING_MARKS, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** The blocks of combining diacritical marks, as `searchTextSql` lists them for PostgreSQL. */
const COMBINING_MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;

/** The words of `text` after {@link searchText}. */
export function searchWords(text: string): string[] {
  const normalized = searchText(text);
  return normalized ? normalized.split(' ') : [];
}

/**
 * The stemmer of a normalized word, chosen as PostgreSQL's `parley_stems` text search
 * configuration chooses it (migration 0105): a word of ASCII letters only is English, any other
 * word of letters only goes to the Russian stemmer (which leaves non-Cyrillic letters alone), a
 * word with digits is not stemmed. Another Snowball language is one more row here and one more
 * dictionary there (docs/api/messaging.md "Search").
 */
const STEMMERS: Array<{ word: RegExp; stem: (word: string) => string }> = [
  { word: /^[a-z]+$/, stem: englishStem },
  { word: /^\p{L}+$/u, stem: russianStem },
];

/**
 * Stems already computed: a Snowball stemmer costs ~4 µs a word, and messages repeat a small
 * vocabulary, so the words of a message are mostly found here (docs/performance.md "Search words").
 * Emptied when full, which bounds it at about a megabyte.
 */
const STEM_CACHE = new Map<string, string>();
const STEM_CACHE_SIZE = 20_000;

/** The Snowball stem of one normalized word (the word itself when no stemmer takes it). */
export function wordStem(word: string): string {
  const known = STEM_CACHE.get(word);
  if (known !== undefined) return known;
  let stem = word;
  for (const s of STEMMERS) {
    if (s.word.test(word)) {
      stem = s.stem(word);
      break;
    }
  }
  if (STEM_CACHE.size >= STEM_CACHE_SIZE) STEM_CACHE.clear();
  STEM_CACHE.set(word, stem);
  return stem;
}

/**
 * The stems of a text's words that differ from their word, each once, space-separated: what
 * SQLite indexes beside the words. A word that is its own stem is already in the words column, and
 * every stem indexed again there cost as much as the words (with their 1-8 character prefixes);
 * the query asks the words column for the stem too (query-terms.ts `fts5MessageQuery`).
 */
export function searchStems(text: string): string {
  const stems = new Set<string>();
  for (const word of searchWords(text)) {
    const stem = wordStem(word);
    if (stem !== word) stems.add(stem);
  }
  return [...stems].join(' ');
}

/** Shortest and longest phone endings a customer is found by (docs/api/search.md). */
const PHONE_ENDINGS = [4, 10] as const;

/**
 * A phone's search words: its digits, and their last 4 to 10 digits, so that "123-45-67" or
 * "1234567" finds `+79161234567`. PostgreSQL's `parley_phone_words` (migration 0106) is the same.
 */
export function phoneWords(phone: string | null): string {
  const digits = (phone ?? '').replace(/[^0-9]/g, '');
  const words = [digits];
  for (let n = PHONE_ENDINGS[1]; n >= PHONE_ENDINGS[0]; n--) if (digits.length > n) words.push(digits.slice(-n));
  return words.join(' ');
}
