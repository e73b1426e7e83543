import type { DefaultStatus } from '../../i18n/texts.js';
import type { StatusRow, StatusType } from '../../db/schema.js';

export type { StatusRow, StatusType };

/** The four status types (docs/api/resources.md "Payment type, tag, status, template group"), in the order lists show them. */
export const STATUS_TYPES = ['active', 'completed', 'failed', 'ignore'] as const satisfies readonly StatusType[];

export interface NewStatusInput {
  name: string;
  type: StatusType;
  /** Position within the type; absent: after the last status of that type. */
  order?: number;
  /** Absent: the default color of the type. */
  color?: string;
}

export interface StatusUpdateInput {
  name?: string;
  color?: string;
  /** Only checked: a type that differs from the status's is a conflict (types never change). */
  type?: StatusType;
}

export interface ReorderItem {
  id: number;
  order: number;
}

/** Where the leads of a deleted status went. */
export interface StatusRemoval {
  movedLeadIds: number[];
  to: { statusId: number | null; statusType: 'inbox' | StatusType };
}

/** The color a status of each type gets when none is given. */
export const DEFAULT_TYPE_COLORS: Record<StatusType, string> = {
  active: '#3b82f6',
  completed: '#22c55e',
  failed: '#ef4444',
  ignore: '#9ca3af',
};

/**
 * What a new account starts with: at least one status of every type (docs/api/leads.md), named in
 * the owner's language (`name`: its text in src/i18n).
 */
export const DEFAULT_STATUSES: ReadonlyArray<{ name: DefaultStatus; type: StatusType; order: number; color: string }> = [
  { name: 'new', type: 'active', order: 1, color: '#3b82f6' },
  { name: 'inProgress', type: 'active', order: 2, color: '#f59e0b' },
  { name: 'won', type: 'completed', order: 1, color: '#22c55e' },
  { name: 'lost', type: 'failed', order: 1, color: '#ef4444' },
  { name: 'notALead', type: 'ignore', order: 1, color: '#9ca3af' },
];

/** List order: by type (active, completed, failed, ignore), then `order`, then id. */
export function compareStatuses(a: StatusRow, b: StatusRow): number {
  return STATUS_TYPES.indexOf(a.type) - STATUS_TYPES.indexOf(b.type) || a.position - b.position || a.id - b.id;
}
