import { pool, type MigrationContext } from './migration-context.js';
import { InterruptedError, SourceError } from './source-client.js';
import { idOf } from './source-records.js';

/**
 * Bulk reads of a Parley source (docs/migrate.md "How long it takes"): customers and leads'
 * channel lists {@link BULK} to a request (`GET /v1.3/customers?id=`, `GET /v1.3/messaging/sources?lead=`)
 * instead of one request each, which was two of a migration's three requests per lead. A source
 * without these routes (a hosted service that speaks api.md only) is read a record per request, as
 * api.md offers: its first answer other than a 200 list turns the bulk form off for the run.
 */

/** Ids per bulk request: the routes' limit, as the lead lists'. */
export const BULK = 200;

/** Whether the source still answers a bulk form (one per form and run). */
export type BulkState = { on: boolean };

/**
 * The items of one bulk answer by the id `keyOf` reads, among `ids` only; empty when the form is off
 * or the source failed it (each record is then asked for alone, where its failure is reported).
 */
export async function bulkRead(
  ctx: MigrationContext,
  state: BulkState,
  path: string,
  param: string,
  ids: string[],
  keyOf: (item: Record<string, unknown>) => unknown,
): Promise<Map<string, unknown>> {
  const found = new Map<string, unknown>();
  if (!state.on || !ids.length) return found;
  let answer;
  try {
    answer = await ctx.client.request('GET', `${path}?${ids.map((id) => `${param}=${encodeURIComponent(id)}`).join('&')}`);
  } catch (err) {
    if (err instanceof InterruptedError || !(err instanceof SourceError)) throw err;
    return found;
  }
  if (answer.status !== 200 || !Array.isArray(answer.body)) {
    state.on = false;
    return found;
  }
  const asked = new Set(ids);
  for (const item of answer.body) {
    const key = typeof item === 'object' && item !== null ? idOf(keyOf(item as Record<string, unknown>)) : undefined;
    if (key !== undefined && asked.has(key)) found.set(key, item);
  }
  return found;
}

/** `items` cut into runs of `size`. */
export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The channel lists (each lead's `sources` array, unread) of `leadIds` that the bulk form answered;
 * a lead missing from the map has its channels read alone. The first page goes alone: a source
 * without the form answers one 404, not one per request in flight.
 */
export async function bulkChannelLists(ctx: MigrationContext, leadIds: string[]): Promise<Map<string, unknown>> {
  const state: BulkState = { on: true };
  const lists = new Map<string, unknown>();
  const read = async (ids: string[]) => {
    for (const [id, item] of await bulkRead(ctx, state, '/v1.3/messaging/sources', 'lead', ids, (i) => i.leadId))
      lists.set(id, (item as Record<string, unknown>).sources);
    ctx.progress('channel lists', lists.size, leadIds.length);
  };
  const [first = [], ...rest] = chunks(leadIds, BULK);
  await read(first);
  if (state.on) await pool(rest, ctx.concurrency, ctx.signal, read);
  return lists;
}
