import type { Attachment } from '../channels/channel.js';
import type { LeadRow, LeadStatusType, StatusRow } from '../../db/schema.js';

/** The lead lists of docs/api/leads.md, plus `leads` (`GET /v1.3/leads`) and the funnel. */
export type LeadList = 'inbox' | 'active' | 'completed' | 'all' | 'leads';

/** `unread` filter (v1.3): unread / read by `read`; unanswered / answered by who wrote last. */
export const UNREAD_FILTERS = ['unread', 'read', 'unanswered', 'answered'] as const;
export type UnreadFilter = (typeof UNREAD_FILTERS)[number];

/** `source_types` filter (v1.3). `comment` covers every comment channel: comment, photo, video, market. */
export const SOURCE_KINDS = ['message', 'comment'] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];
export const SOURCE_TYPES_OF_KIND: Record<SourceKind, readonly string[]> = {
  message: ['message'],
  comment: ['comment', 'photo', 'video', 'market'],
};

/**
 * Filters of the lead lists. Absent = no filter. Within one filter values are alternatives (any
 * of them); different filters must all hold.
 */
export interface LeadFilters {
  types?: string[];
  sa?: number[];
  tags?: string[];
  users?: number[];
  statuses?: number[];
  customer?: number;
  sourceKinds?: SourceKind[];
  unread?: UnreadFilter;
  lastMessageFrom?: number;
  lastMessageTo?: number;
  /** Created at or after / at or before (Unix ms). */
  createdFrom?: number;
  createdTo?: number;
  ignore?: boolean;
  ids?: number[];
  /**
   * v1.3 `overdue`: open (inbox or active) leads whose customer has waited longer than the
   * account's first-response target (true), or the others (false). The service resolves it into
   * `awaitingCutoff` before the query is built.
   */
  overdue?: boolean;
  /** The resolved `overdue`: waiting since at or before this instant (Unix ms); null: no target, nothing is overdue. */
  awaitingCutoff?: number | null;
}

export interface LeadPage {
  offset: number;
  limit: number;
}

export interface LeadQuery {
  filters: LeadFilters;
  page: LeadPage;
}

/** Which status types a query covers: only these, or all except these. */
export type StatusTypeSet = { only: LeadStatusType[] } | { except: LeadStatusType[] } | 'any';

/** The last message of a lead, as lists show it. */
export interface LastMessage {
  createdAt: number;
  incoming: boolean;
  text: string;
  url: string;
  attachments: Attachment[];
}

/** A lead with what list items show of its customer, integration, last message and tags. */
export interface LeadListEntry {
  lead: LeadRow;
  customer: { id: number; login: string; name: string; avatar: string; email: string | null; phone: string | null };
  integration: { id: number; login: string; type: string };
  message: LastMessage | null;
  tags: string[];
}

export interface LeadListResult {
  entries: LeadListEntry[];
  total: number;
}

export interface FunnelColumn {
  status: StatusRow;
  entries: LeadListEntry[];
}

export interface FunnelResult {
  columns: FunnelColumn[];
  total: number;
}

export interface ListCounts<T> {
  inbox: T;
  active: T;
  completed: T;
  all: T;
  ignore: T;
}

export interface LeadStatistics {
  lists: ListCounts<number>;
  /** Exact sums of the leads' amounts per list; only when asked for. */
  amounts?: ListCounts<bigint>;
  /** `amount`: the exact sum of the status's lead amounts; only when amounts are asked for. */
  statuses: Array<{ status: StatusRow; count: number; amount?: bigint }>;
  /** UTC day (YYYY-MM-DD) of creation, ascending; days without new leads are left out. */
  newLeads: Array<{ date: string; count: number }>;
  /** `withinTarget`: of `count`, the leads answered within the first-response target; only when the account has one. */
  responseTime: { median: number | null; count: number; withinTarget?: number };
  /** Per responsible employee (userId null: unassigned) and per channel type, most leads first; only when asked for. */
  employees?: Array<{ userId: number | null; count: number; responseTime: { median: number | null; count: number } }>;
  channels?: Array<{ type: string; count: number; responseTime: { median: number | null; count: number } }>;
}

/** `customFields` values: a string or number, or `{value, title}`. */
export type CustomFieldValue = string | number | { value: string | number; title: string };

/** `items` elements: `title` and `count` required, anything else kept as given. */
export interface LeadItem {
  title: string;
  count: number;
  [key: string]: unknown;
}

/** The editable fields of a lead (`PUT /leads/<id>`, and `POST /v1.3/leads`). */
export interface LeadFieldsInput {
  statusId?: number | null;
  details?: string;
  amount?: number;
  userId?: number | null;
  address?: string;
  ttn?: string;
  customData?: string;
  /** Checked by the service: each value a string, a number or `{value, title}`. */
  customFields?: Record<string, unknown>;
  paymentTypeId?: number | null;
  items?: LeadItem[];
}

export interface ReadSource {
  type: string;
  saId: number;
}

export interface AcceptInput {
  userId?: number;
  userID?: number;
}

export interface NewLeadInput extends LeadFieldsInput {
  saId: number;
  customerId?: number;
  customer?: { name: string; phone?: string | null; email?: string | null; address?: string | null };
}
