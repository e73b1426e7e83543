import type { SeededLead } from './leads-seed.js';
import { listOrder } from './leads-seed.js';

/**
 * The lead list rules of docs/api/auth.md, docs/api/leads.md written again, plainly, over seeded leads held in
 * memory: what the API's SQL must agree with.
 */

export type ListName = 'inbox' | 'active' | 'completed' | 'all' | 'leads';

export interface RefFilters {
  types?: string[];
  sa?: number[];
  tags?: string[];
  users?: number[];
  statuses?: number[];
  customer?: number;
  sourceKinds?: Array<'message' | 'comment'>;
  unread?: 'unread' | 'read' | 'unanswered' | 'answered';
  lastMessageFrom?: number;
  lastMessageTo?: number;
  ignore?: boolean;
  ids?: number[];
}

/** Who asks: the owner, or a manager's reach. */
export type RefActor =
  | { owner: true }
  | { owner: false; self: number; integrations: 'all' | number[]; allowAllDeals: boolean; allowedUsers: number[] };

export function visibleTo(actor: RefActor, l: SeededLead): boolean {
  if (actor.owner) return true;
  if (actor.integrations !== 'all' && !actor.integrations.includes(l.integrationId)) return false;
  if (actor.allowAllDeals) return true;
  if (l.userId === null) return l.statusType === 'inbox';
  return l.userId === actor.self || actor.allowedUsers.includes(l.userId);
}

function inList(list: ListName, f: RefFilters, l: SeededLead): boolean {
  switch (list) {
    case 'inbox':
      return l.statusType === 'inbox';
    case 'active':
      return l.statusType === 'active';
    case 'completed':
      return l.statusType === 'completed' || l.statusType === 'failed';
    case 'all':
      return f.ignore === true || l.statusType !== 'ignore';
    case 'leads':
      return f.ignore === true || (f.ignore === undefined && f.ids !== undefined) || l.statusType !== 'ignore';
  }
}

const COMMENT_TYPES = ['comment', 'photo', 'video', 'market'];

export function matchesFilters(f: RefFilters, l: SeededLead): boolean {
  if (f.types && !f.types.includes(l.integrationType)) return false;
  if (f.sa && !f.sa.includes(l.integrationId)) return false;
  if (f.tags && !l.tags.some((t) => f.tags!.includes(t))) return false;
  if (f.users && (l.userId === null || !f.users.includes(l.userId))) return false;
  if (f.statuses && (l.statusId === null || !f.statuses.includes(l.statusId))) return false;
  if (f.customer !== undefined && l.customerId !== f.customer) return false;
  if (f.sourceKinds) {
    const ok = l.sourceTypes.some(
      (t) => (f.sourceKinds!.includes('message') && t === 'message') || (f.sourceKinds!.includes('comment') && COMMENT_TYPES.includes(t)),
    );
    if (!ok) return false;
  }
  if (f.unread === 'unread' && !(l.unreadCount > 0)) return false;
  if (f.unread === 'read' && l.unreadCount !== 0) return false;
  if (f.unread === 'unanswered' && l.lastMessageIncoming !== 1) return false;
  if (f.unread === 'answered' && l.lastMessageIncoming !== 0) return false;
  if (f.lastMessageFrom !== undefined && l.lastMessageAt < f.lastMessageFrom) return false;
  if (f.lastMessageTo !== undefined && l.lastMessageAt > f.lastMessageTo) return false;
  if (f.ids && !f.ids.includes(l.id)) return false;
  return true;
}

/** Every lead of the list the actor would get, in list order. */
export function referenceList(leads: SeededLead[], list: ListName, f: RefFilters, actor: RefActor): SeededLead[] {
  return leads.filter((l) => visibleTo(actor, l) && inList(list, f, l) && matchesFilters(f, l)).sort(listOrder);
}
