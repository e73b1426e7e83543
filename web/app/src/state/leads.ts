import type { HistoryMessage, Lead, Status } from '../api/types';

export type ListName = 'inbox' | 'active' | 'completed' | 'all';
export const LISTS: ListName[] = ['inbox', 'active', 'completed', 'all'];

export interface ListState {
  items: Lead[];
  total: number;
  /** Every page has been loaded. */
  done: boolean;
}

export const emptyList: ListState = { items: [], total: 0, done: false };

/** When the lead last moved: its last message, or its creation when it has none. */
export function leadTime(lead: Lead): number {
  return Date.parse(lead.message?.timestamp ?? lead.createdAt) || 0;
}

/** Newest last message first, as the API sorts; ties by id descending. */
export function compareLeads(a: Lead, b: Lead): number {
  return leadTime(b) - leadTime(a) || b.id - a.id;
}

/** Adds a page from the API (offset = items already held); leads already held are not repeated. */
export function appendPage(state: ListState, page: Lead[], total: number | null, limit: number): ListState {
  const seen = new Set(state.items.map((l) => l.id));
  const items = state.items.concat(page.filter((l) => !seen.has(l.id)));
  return { items, total: total ?? Math.max(state.total, items.length), done: page.length < limit };
}

/** Puts a lead (new or changed) where its last message time sorts it. */
export function upsertLead(state: ListState, lead: Lead): ListState {
  const known = state.items.some((l) => l.id === lead.id);
  const items = state.items.filter((l) => l.id !== lead.id);
  const at = items.findIndex((l) => compareLeads(lead, l) < 0);
  // A lead older than every held one belongs to a page not loaded yet, unless the list is complete.
  if (at === -1 && !state.done && items.length > 0) {
    return known ? { ...state, items, total: state.total } : state;
  }
  items.splice(at === -1 ? items.length : at, 0, lead);
  return { ...state, items, total: known ? state.total : state.total + 1 };
}

export function removeLead(state: ListState, id: number): ListState {
  if (!state.items.some((l) => l.id === id)) return state;
  return { ...state, items: state.items.filter((l) => l.id !== id), total: Math.max(0, state.total - 1) };
}

export function findLead(state: ListState, id: number): Lead | undefined {
  return state.items.find((l) => l.id === id);
}

/**
 * A message event for a lead the list holds: its last message becomes this one and it moves to
 * the top. Unread grows for incoming messages unless the employee has the conversation open.
 * Answers the state unchanged (same object) when the list does not hold the lead.
 */
export function applyMessage(state: ListState, leadId: number, msg: HistoryMessage, openLeadId: number | null): ListState {
  const lead = findLead(state, leadId);
  if (!lead) return state;
  const counts = msg.incoming && openLeadId !== leadId;
  const unread = msg.incoming ? (counts ? (lead.message?.unread ?? 0) + 1 : 0) : (lead.message?.unread ?? 0);
  const next: Lead = {
    ...lead,
    read: unread === 0,
    message: { unread, timestamp: new Date(msg.datetime).toISOString(), incoming: msg.incoming, data: msg.message },
  };
  return upsertLead(state, next);
}

/** Marks a lead read in the list (the employee opened it). */
export function markRead(state: ListState, id: number): ListState {
  const lead = findLead(state, id);
  if (!lead || (lead.read && !lead.message?.unread)) return state;
  return {
    ...state,
    items: state.items.map((l) => (l.id === id ? { ...l, read: true, message: l.message ? { ...l.message, unread: 0 } : null } : l)),
  };
}

/** Whether a lead belongs to a list by its status (filters aside): docs/api/leads.md. */
export function inList(list: ListName, lead: Pick<Lead, 'statusId'>, statuses: Status[]): boolean {
  if (lead.statusId === null) return list === 'inbox' || list === 'all';
  const type = statuses.find((s) => s.id === lead.statusId)?.type;
  if (list === 'active') return type === 'active';
  if (list === 'completed') return type === 'completed' || type === 'failed';
  if (list === 'all') return type !== 'ignore';
  return false;
}

export interface Filters {
  sa: number[];
  types: string[];
  tags: string[];
  users: number[];
  statuses: number[];
  unread: '' | 'unread' | 'read' | 'unanswered' | 'answered';
  /** Only leads waiting longer than the account's first-response target. */
  overdue: boolean;
}

export const noFilters: Filters = { sa: [], types: [], tags: [], users: [], statuses: [], unread: '', overdue: false };

/** The query parameters of a list call; statuses are not accepted by the inbox list. */
export function filterParams(list: ListName, f: Filters): Record<string, Array<string | number> | string | undefined> {
  return {
    sa: f.sa,
    types: f.types,
    tags: f.tags,
    users: f.users,
    statuses: list === 'inbox' ? undefined : f.statuses,
    unread: f.unread || undefined,
    overdue: f.overdue ? 'true' : undefined,
  };
}

export function activeFilterCount(f: Filters): number {
  return f.sa.length + f.types.length + f.tags.length + f.users.length + f.statuses.length + (f.unread ? 1 : 0) + (f.overdue ? 1 : 0);
}
