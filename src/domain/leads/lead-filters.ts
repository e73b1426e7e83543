import { canonicalIntegrationType } from '../channels/integration-types.js';
import { invalid } from '../errors.js';
import {
  SOURCE_KINDS,
  SOURCE_TYPES_OF_KIND,
  UNREAD_FILTERS,
  type LeadFilters,
  type LeadList,
  type LeadPage,
  type LeadQuery,
  type SourceKind,
  type StatusTypeSet,
  type UnreadFilter,
} from './leads.types.js';

/**
 * Lead list parameters (docs/api/leads.md, docs/api/errors.md): from a parsed query string to
 * filters and a page. Repeated parameters arrive in three forms that real clients use, alone or
 * mixed: `a=1&a=2` (the parser gives an array), `a=1,2`, and `a[]=1&a[]=2` (key `a[]`).
 */

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;
/** Values one repeated parameter may carry, all forms together. */
export const MAX_VALUES = 200;

export type RawQuery = Record<string, unknown>;

/**
 * The values of a repeated parameter in any of its forms, trimmed, empty ones dropped, each value
 * once, in order of appearance. `undefined` when the parameter is absent altogether.
 */
export function repeatedParam(query: RawQuery, name: string): string[] | undefined {
  const raw = [query[name], query[`${name}[]`]].filter((v) => v !== undefined && v !== null);
  if (!raw.length) return undefined;
  const seen = new Set<string>();
  for (const value of raw.flat()) {
    for (const part of String(value).split(',')) {
      const trimmed = part.trim();
      if (trimmed) seen.add(trimmed);
    }
  }
  return [...seen];
}

const ID = /^[0-9]{1,15}$/;

function bad(name: string, message: string) {
  return invalid(`Invalid request: querystring.${name} ${message}`, [{ path: `querystring.${name}`, message }]);
}

function values(query: RawQuery, name: string): string[] | undefined {
  const list = repeatedParam(query, name);
  if (list && list.length > MAX_VALUES) throw bad(name, `must not carry more than ${MAX_VALUES} values`);
  // `types=` with nothing in it filters nothing.
  return list?.length ? list : undefined;
}

function ids(query: RawQuery, name: string): number[] | undefined {
  const list = values(query, name);
  if (!list) return undefined;
  return list.map((v) => {
    if (!ID.test(v)) throw bad(name, 'must be integers');
    return Number(v);
  });
}

/** A required repeated id parameter (`id=1&id=2`, `id=1,2`, `id[]=1`): 1 to {@link MAX_VALUES} integers, else 400. */
export function requiredIds(query: RawQuery, name: string): number[] {
  const list = ids(query, name);
  if (!list) throw bad(name, 'is required: one id or more');
  return list;
}

function vocabulary<T extends string>(query: RawQuery, name: string, allowed: readonly T[]): T[] | undefined {
  const list = values(query, name);
  if (!list) return undefined;
  for (const v of list) {
    if (!(allowed as readonly string[]).includes(v)) throw bad(name, `must be one of ${allowed.join(', ')}`);
  }
  return list as T[];
}

export interface ParseOptions {
  list: LeadList | 'funnel' | 'statistics';
  /** The v1.3 filters (customer, source_types, unread, dates, ignore, id, overdue) are read. */
  extended: boolean;
  /** `limit` above the maximum is clamped (v1.1) rather than refused. */
  clampLimit: boolean;
}

/**
 * Filters and page from a query string already checked by the route's schema (scalars coerced).
 * Unknown parameters are ignored; a parameter of the wrong type or outside its closed vocabulary
 * is a 400, as is `statuses` on the inbox.
 */
export function parseLeadQuery(query: RawQuery, opts: ParseOptions): LeadQuery {
  return { filters: parseLeadFilters(query, opts), page: parsePage(query, opts.clampLimit) };
}

/** The filters alone (statistics has no page). */
export function parseLeadFilters(query: RawQuery, opts: Omit<ParseOptions, 'clampLimit'>): LeadFilters {
  const filters: LeadFilters = {};
  const assign = <K extends keyof LeadFilters>(key: K, value: LeadFilters[K] | undefined) => {
    if (value !== undefined) filters[key] = value;
  };
  assign('types', values(query, 'types')?.map(canonicalIntegrationType));
  assign('sa', ids(query, 'sa'));
  assign('tags', values(query, 'tags'));
  assign('users', ids(query, 'users'));
  if (opts.list === 'inbox') {
    if (repeatedParam(query, 'statuses') !== undefined) throw bad('statuses', 'is not accepted by the inbox (its leads have no status)');
  } else {
    assign('statuses', ids(query, 'statuses'));
  }
  if (opts.extended) {
    assign('customer', integer(query, 'customer'));
    assign('sourceKinds', vocabulary<SourceKind>(query, 'source_types', SOURCE_KINDS));
    const unread = query.unread;
    if (unread !== undefined) {
      if (typeof unread !== 'string' || !(UNREAD_FILTERS as readonly string[]).includes(unread)) {
        throw bad('unread', `must be one of ${UNREAD_FILTERS.join(', ')}`);
      }
      filters.unread = unread as UnreadFilter;
    }
    assign('lastMessageFrom', integer(query, 'lastMessageFrom'));
    assign('lastMessageTo', integer(query, 'lastMessageTo'));
    assign('createdFrom', integer(query, 'createdFrom'));
    assign('createdTo', integer(query, 'createdTo'));
    if (query.ignore !== undefined) {
      if (typeof query.ignore !== 'boolean') throw bad('ignore', 'must be boolean');
      filters.ignore = query.ignore;
    }
    assign('ids', ids(query, 'id'));
    if (query.overdue !== undefined) {
      if (typeof query.overdue !== 'boolean') throw bad('overdue', 'must be boolean');
      filters.overdue = query.overdue;
    }
  }
  return filters;
}

function integer(query: RawQuery, name: string): number | undefined {
  const v = query[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw bad(name, 'must be a non-negative integer');
  return v;
}

/** `offset` (>= 0, default 0) and `limit` (1..200, default 50; clamped to 200 when `clampLimit`). */
export function parsePage(query: RawQuery, clampLimit: boolean): LeadPage {
  const offset = integer(query, 'offset') ?? 0;
  let limit = integer(query, 'limit') ?? DEFAULT_LIMIT;
  if (limit < 1) throw bad('limit', 'must be >= 1');
  if (limit > MAX_LIMIT) {
    if (!clampLimit) throw bad('limit', `must be <= ${MAX_LIMIT}`);
    limit = MAX_LIMIT;
  }
  return { offset, limit };
}

/** The status types a list covers (docs/api/leads.md). */
export function statusTypesOf(list: LeadList, filters: LeadFilters): StatusTypeSet {
  switch (list) {
    case 'inbox':
      return { only: ['inbox'] };
    case 'active':
      return { only: ['active'] };
    case 'completed':
      return { only: ['completed', 'failed'] };
    case 'all':
      return filters.ignore ? 'any' : { except: ['ignore'] };
    case 'leads':
      // Leads asked for by id are answered whatever their status, unless `ignore=false` says otherwise.
      if (filters.ignore === true || (filters.ignore === undefined && filters.ids)) return 'any';
      return { except: ['ignore'] };
  }
}

/** Channel types a `source_types` filter stands for. */
export function sourceTypesOf(kinds: SourceKind[]): string[] {
  return [...new Set(kinds.flatMap((k) => SOURCE_TYPES_OF_KIND[k]))];
}
