import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';

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
 * Lead counts and median response times per employee or per channel type, over `where`. The
 * counts are one grouped query. The medians read the known response times of the group in order
 * (one indexed-free pass over the matching leads' two columns): neither SQLite nor every SQL
 * dialect has a median aggregate, and a reports page asks for this rarely.
 */
export async function breakdown(db: Executor, where: RawBuilder<SqlBool>, by: Breakdown): Promise<BreakdownRow[]> {
  const key = keyOf(by);
  const base = () => db.selectFrom('leads').innerJoin('integrations', 'integrations.id', 'leads.integration_id').where(where);
  const [counts, times] = await Promise.all([
    base()
      .select([key.as('key'), sql<number>`count(*)`.as('n')])
      .groupBy(key)
      .execute(),
    base()
      .select([key.as('key'), 'leads.response_time as rt'])
      .where('leads.response_time', 'is not', null)
      .orderBy('leads.response_time')
      .execute(),
  ]);
  const values = new Map<string, number[]>();
  for (const t of times) {
    const k = JSON.stringify(normalize(t.key));
    const list = values.get(k) ?? [];
    list.push(Number(t.rt));
    values.set(k, list);
  }
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
