import type { RawBuilder, SqlBool } from 'kysely';
import type { Executor } from '../../db/database.js';
import type { WorkingHours } from '../automation/working-hours.js';
import { workingResponseTime } from '../automation/working-time.js';
import { median, type ResponseMeasure } from './lead-statistics.repo.js';
import { answeredWithin, knownResponseTimes, responseTimeMedian } from './leads.repo.js';
import type { LeadStatistics } from './leads.types.js';

/** Response times counted within the working hours (docs/api/automation.md "First-response target"). */
export const workingMeasure =
  (hours: WorkingHours): ResponseMeasure =>
  (rt, at) =>
    workingResponseTime(hours, rt, at);

/**
 * The statistics' `responseTime` over `where`: the median, how many leads have a response time and,
 * with a target (minutes), how many of them were answered within it. In calendar time from SQL;
 * with `measure` from every known response time, each measured, as the breakdowns read them.
 */
export async function responseTimes(
  db: Executor,
  where: RawBuilder<SqlBool>,
  target: number | null,
  measure: ResponseMeasure | undefined,
): Promise<LeadStatistics['responseTime']> {
  const targetMs = target === null ? null : target * 60_000;
  if (measure) {
    const times = (await knownResponseTimes(db, where)).map((r) => measure(r.rt, r.at)).sort((a, b) => a - b);
    const middle = median(times);
    if (targetMs === null) return { median: middle, count: times.length };
    return { median: middle, count: times.length, withinTarget: times.filter((t) => t <= targetMs).length };
  }
  const [times, within] = await Promise.all([
    responseTimeMedian(db, where),
    targetMs === null ? undefined : answeredWithin(db, where, targetMs),
  ]);
  return within === undefined ? times : { ...times, withinTarget: within };
}
