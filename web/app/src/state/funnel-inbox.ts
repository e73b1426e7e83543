import { query } from '../api/client';
import { formatAmount } from '../i18n';
import type { FunnelColumn, Lead, Statistics } from '../api/types';
import { filterParams, noFilters, type Filters } from './leads';

/** The board's Inbox column has this id: no status has it (ids start at 1). */
export const INBOX_COLUMN = 0;

/** The funnel's columns with the Inbox (new leads, no status) in front of them. */
export function withInbox(columns: FunnelColumn[], inbox: Lead[], name: string): FunnelColumn[] {
  return [{ id: INBOX_COLUMN, name, order: -1, type: 'active', color: 'var(--muted)', leads: inbox }, ...columns];
}

/** The status a drop on a column means: null for the Inbox. */
export function statusOfColumn(id: number): number | null {
  return id === INBOX_COLUMN ? null : id;
}

/** How many leads a column stands for and the exact sum of their amounts: all of them, not only the loaded page. */
export interface ColumnTotal {
  count: number;
  amount: bigint;
}

/** Totals per column id (the Inbox under INBOX_COLUMN). */
export type BoardTotals = ReadonlyMap<number, ColumnTotal>;

/** Leads the board loads per column; the totals come from the server and cover every lead. */
export const BOARD_PAGE = 100;

/**
 * The board's three requests: the funnel, the Inbox and their totals, all with the same filters
 * (today none: the board shows everything the employee may see), so a total always covers exactly
 * the leads its column stands for. The server applies the employee's visibility to each of them.
 */
export function boardRequests(filters: Filters = noFilters): { funnel: string; inbox: string; totals: string } {
  return {
    funnel: `/leads/funnel${query({ ...filterParams('all', filters), limit: BOARD_PAGE })}`,
    inbox: `/leads/inbox${query({ ...filterParams('inbox', filters), limit: BOARD_PAGE })}`,
    // `statuses` picks the funnel's columns, not their leads: the Inbox column's total must not lose it.
    totals: `/leads/statistics${query({ ...filterParams('inbox', filters), amounts: true })}`,
  };
}

/**
 * Column totals from GET /v1.3/leads/statistics?amounts=true: the Inbox is the `inbox` list,
 * every other column its status. Sums are decimal strings (exact beyond 2^53): read as BigInt.
 */
export function totalsOf(stats: Statistics): Map<number, ColumnTotal> {
  const totals = new Map<number, ColumnTotal>();
  totals.set(INBOX_COLUMN, { count: stats.lists.inbox, amount: BigInt(stats.amounts?.inbox ?? 0) });
  for (const s of stats.statuses) totals.set(s.id, { count: s.count, amount: BigInt(s.amount ?? 0) });
  return totals;
}

/**
 * The totals once a lead moved between columns, before the server answers (the board then asks
 * the server again): the lead's amount and one lead leave `from` and join `to`.
 */
export function moveTotals(totals: BoardTotals, amount: number, from: number, to: number): BoardTotals {
  if (from === to || !totals.has(from) || !totals.has(to)) return totals;
  const value = BigInt(Number.isSafeInteger(amount) ? amount : 0);
  const next = new Map(totals);
  const shift = (id: number, sign: 1 | -1) => {
    const t = next.get(id);
    if (t) next.set(id, { count: t.count + sign, amount: t.amount + (sign === 1 ? value : -value) });
  };
  shift(from, -1);
  shift(to, 1);
  return next;
}

/** A column's amount total as shown: in the account's currency and the app's language, exact however large. */
export function formatTotal(amount: bigint): string {
  return formatAmount(amount);
}
