import type { FunnelColumn, Lead } from '../api/types';

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

/** The sum of the amounts of a column's leads. */
export function columnAmount(column: FunnelColumn): number {
  return column.leads.reduce((n, l) => n + (Number.isFinite(l.amount) ? l.amount : 0), 0);
}
