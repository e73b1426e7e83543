import { errorText } from '../i18n/errors';
/**
 * Selection of leads in a list for bulk work: click toggles one, Shift+click selects the range
 * from the last clicked one (the anchor), "select all" takes the leads shown.
 */
export interface Selection {
  ids: ReadonlySet<number>;
  anchor: number | null;
}

export const noSelection: Selection = { ids: new Set(), anchor: null };

export function toggle(sel: Selection, id: number): Selection {
  const ids = new Set(sel.ids);
  if (ids.has(id)) ids.delete(id);
  else ids.add(id);
  return { ids, anchor: id };
}

/** Shift+click: every lead between the anchor and `id` (in list order) becomes selected. */
export function selectRange(sel: Selection, order: readonly number[], id: number): Selection {
  const to = order.indexOf(id);
  const from = sel.anchor === null ? -1 : order.indexOf(sel.anchor);
  if (to === -1) return sel;
  if (from === -1) return toggle(sel, id);
  const ids = new Set(sel.ids);
  for (let i = Math.min(from, to); i <= Math.max(from, to); i++) ids.add(order[i]);
  return { ids, anchor: id };
}

export function selectAll(sel: Selection, order: readonly number[]): Selection {
  return { ids: new Set([...sel.ids, ...order]), anchor: sel.anchor };
}

/** Drops ids no longer shown (a lead left the list). */
export function keepShown(sel: Selection, order: readonly number[]): Selection {
  const shown = new Set(order);
  if ([...sel.ids].every((id) => shown.has(id))) return sel;
  return {
    ids: new Set([...sel.ids].filter((id) => shown.has(id))),
    anchor: sel.anchor !== null && shown.has(sel.anchor) ? sel.anchor : null,
  };
}

export interface BulkOutcome {
  done: number;
  total: number;
  failures: Array<{ id: number; message: string }>;
}

/**
 * Runs `action` for each id, a few at a time (the API has no bulk call; each lead is one request),
 * reporting progress after every one. Failures are collected, never stop the others.
 */
export async function runBulk(
  ids: readonly number[],
  action: (id: number) => Promise<unknown>,
  onProgress: (o: BulkOutcome) => void,
  concurrency = 4,
): Promise<BulkOutcome> {
  const outcome: BulkOutcome = { done: 0, total: ids.length, failures: [] };
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++];
      try {
        await action(id);
      } catch (e) {
        outcome.failures.push({ id, message: errorText(e) });
      }
      outcome.done++;
      onProgress({ ...outcome, failures: [...outcome.failures] });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker));
  return outcome;
}
