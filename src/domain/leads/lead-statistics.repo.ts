import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';

/** How a lead's response time is measured from its calendar figure and when the answer came. */
export type ResponseMeasure = (responseTime: number, respondedAt: number | null) => number;

/** How the statistics break the leads down: by responsible employee or by channel (integration) type. */
export type Breakdown = 'employee' | 'channel';

export interface BreakdownRow {
  /** Employee id (null: unassigned) or integration type. */
  key: number | string | null;
  count: number;
  responseTime: { median: number | null; count: number };
}

const keyOf = (by: Breakdown) => (by === 'employee' ? sql.ref('leads.user_id') : sql.ref('integrations.type'));

/**
 * Lead counts and median response times per employee or per channel type, over `where`, each
 * response time measured by `measure` when given (working time). The
 * counts are one grouped query. The medians read the known response times of the group in order
 * (one indexed-free pass over the matching leads' two columns): neither SQLite nor every SQL
 * dialect has a median aggregate, and a reports page asks for this rarely.
 */
export async function breakdown(
  db: Executor,
  where: RawBuilder<SqlBool>,
  by: Breakdown,
  measure?: ResponseMeasure,
): Promise<BreakdownRow[]> {
  const key = keyOf(by);
  const base = () => db.selectFrom('leads').innerJoin('integrations', 'integrations.id', 'leads.integration_id').where(where);
  const [counts, times] = await Promise.all([
    base()
      .select([key.as('key'), sql<number>`count(*)`.as('n')])
      .groupBy(key)
      .execute(),
    base()
      .select([key.as('key'), 'leads.response_time as rt', 'leads.responded_at as at'])
      .where('leads.response_time', 'is not', null)
      .orderBy('leads.response_time')
      .execute(),
  ]);
  const values = new Map<string, number[]>();
  for (const t of times) {
    const k = JSON.stringify(normalize(t.key));
    const list = values.get(k) ?? [];
    list.push(measure ? measure(Number(t.rt), t.at === null ? null : Number(t.at)) : Number(t.rt));
    values.set(k, list);
  }
  // Measured in working time, the calendar order no longer holds.
  if (measure) for (const list of values.values()) list.sort((a, b) => a - b);
  return counts
    .map((c) => {
      const k = normalize(c.key);
      const known = values.get(JSON.stringify(k)) ?? [];
      return { key: k, count: Number(c.n), responseTime: { median: median(known), count: known.length } };
    })
    .sort((a, b) => b.count - a.count || String(a.key).localeCompare(String(b.key)));
}

/** pg answers bigint ids as numbers already; SQLite too. Types stay strings. */
function normalize(key: unknown): number | string | null {
  if (key === null || key === undefined) return null;
  return typeof key === 'string' ? key : Number(key);
}

/** Median of sorted values (the mean of the two middle ones for an even count), rounded to ms. */
export function median(sorted: number[]): number | null {
  if (!sorted.length) return null;
  const mid = Math.floor((sorted.length - 1) / 2);
  const middle = sorted.length % 2 ? [sorted[mid]] : [sorted[mid], sorted[mid + 1]];
  return Math.round(middle.reduce((a, b) => a + b, 0) / middle.length);
}
