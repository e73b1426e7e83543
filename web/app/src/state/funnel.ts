import type { FunnelColumn, Lead } from '../api/types';
import { compareLeads } from './leads';

/** Moves a lead to another column (optimistically, before the API answers); same column: unchanged. */
export function moveLead(columns: FunnelColumn[], leadId: number, toStatusId: number): FunnelColumn[] {
  let moving: Lead | undefined;
  for (const c of columns) {
    const found = c.leads.find((l) => l.id === leadId);
    if (found) {
      if (c.id === toStatusId) return columns;
      moving = found;
    }
  }
  if (!moving || !columns.some((c) => c.id === toStatusId)) return columns;
  const moved: Lead = { ...moving, statusId: toStatusId };
  return columns.map((c) => {
    if (c.id === toStatusId) return { ...c, leads: [...c.leads, moved].sort(compareLeads) };
    if (c.leads.some((l) => l.id === leadId)) return { ...c, leads: c.leads.filter((l) => l.id !== leadId) };
    return c;
  });
}

/** The column under a point: the one whose box holds x (columns are side by side). */
export function columnAt(boxes: Array<{ id: number; left: number; right: number }>, x: number): number | null {
  return boxes.find((b) => x >= b.left && x < b.right)?.id ?? null;
}

/** Reorders ids: the dragged one goes to the index of the target. */
export function reorder<T>(list: T[], from: number, to: number): T[] {
  if (from === to || from < 0 || to < 0 || from >= list.length || to >= list.length) return list;
  const next = list.slice();
  const [x] = next.splice(from, 1);
  next.splice(to, 0, x);
  return next;
}
