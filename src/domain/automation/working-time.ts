import { localTime, WEEK_DAYS, type WeekDay, type WorkingHours } from './working-hours.js';

/**
 * Time counted in working hours (docs/api/automation.md "First-response target"): the response time
 * in reports and the overdue cut-off. Both walk the calendar a stretch at a time: from an instant to
 * the next place where the local day opens or closes, so a wait of days costs a few steps per day,
 * not one per minute.
 */

const MINUTE = 60_000;
const DAY_MINUTES = 1440;
/** How far back the overdue cut-off looks for working time before it decides there is none. */
const LOOK_BACK_MS = 800 * 86_400_000;

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const mod = (a: number, n: number) => ((a % n) + n) % n;

/** The day's open ranges in local minutes: none on a holiday or a day missing from the week. */
function rangesOf(hours: WorkingHours, local: { date: string; day: WeekDay }): Array<[number, number]> {
  if (hours.holidays.includes(local.date)) return [];
  return (hours.week[local.day] ?? []).map(([from, to]) => [minutesOf(from), minutesOf(to)]);
}

/**
 * Offsets seen, per time zone and whole minute: the walks of many leads meet at the same openings
 * and closings, and reading the zone through Intl is most of a walk's cost.
 */
const offsets = new Map<string, Map<number, number>>();
const OFFSETS_KEPT = 50_000;

/** How far the zone's wall clock is ahead of UTC at `at` (time zones move by whole minutes). */
function offsetOf(at: number, timezone: string): number {
  const minute = at - mod(at, MINUTE);
  let seen = offsets.get(timezone);
  if (!seen) {
    seen = new Map();
    offsets.set(timezone, seen);
  }
  let offset = seen.get(minute);
  if (offset === undefined) {
    const local = localTime(minute, timezone);
    offset = Date.parse(`${local.date}T00:00:00Z`) + local.minute * MINUTE - minute;
    if (seen.size >= OFFSETS_KEPT) seen.clear();
    seen.set(minute, offset);
  }
  return offset;
}

/** `localTime` from the offset: the wall clock read as if it were UTC. */
function wallTime(at: number, timezone: string): { date: string; day: WeekDay; minute: number } {
  const wall = new Date(at + offsetOf(at, timezone));
  return {
    date: wall.toISOString().slice(0, 10),
    day: WEEK_DAYS[(wall.getUTCDay() + 6) % 7],
    minute: wall.getUTCHours() * 60 + wall.getUTCMinutes(),
  };
}

/** The first whole minute after `lo` whose offset differs from `lo`'s, knowing `hi`'s does. */
function offsetChange(lo: number, hi: number, timezone: string): number {
  const before = offsetOf(lo, timezone);
  let a = lo - mod(lo, MINUTE);
  let b = hi - mod(hi, MINUTE);
  while (b - a > MINUTE) {
    const mid = a + Math.floor((b - a) / MINUTE / 2) * MINUTE;
    if (offsetOf(mid, timezone) === before) a = mid;
    else b = mid;
  }
  return b;
}

/**
 * Where the stretch from `at` to local minute `target` (later that local day; 1440 is midnight)
 * ends: there, or earlier where the offset changes (daylight saving), so that within a stretch
 * the wall clock runs with real time and the next stretch reads the clock afresh.
 */
function stretchEnd(at: number, minute: number, target: number, timezone: string): number {
  const end = at - mod(at, MINUTE) + (target - minute) * MINUTE;
  return offsetOf(end, timezone) === offsetOf(at, timezone) ? end : offsetChange(at, end, timezone);
}

/** The same backwards: where the stretch ending at `at` from local minute `target` (earlier that day) starts. */
function stretchStart(at: number, minute: number, target: number, timezone: string): number {
  const start = at - mod(at, MINUTE) - (minute - target) * MINUTE;
  return offsetOf(start, timezone) === offsetOf(at, timezone) ? start : offsetChange(start, at, timezone);
}

/** Working milliseconds in [from, to): all of it when the hours are open around the clock. */
export function workingMsBetween(hours: WorkingHours, from: number, to: number): number {
  let total = 0;
  let t = from;
  while (t < to) {
    const local = wallTime(t, hours.timezone);
    const ranges = rangesOf(hours, local);
    const open = ranges.find(([a, b]) => local.minute >= a && local.minute < b);
    // The next change: the end of the open range, or the next opening today, or midnight.
    const boundary = open ? open[1] : Math.min(DAY_MINUTES, ...ranges.map(([a]) => a).filter((a) => a > local.minute));
    const next = stretchEnd(t, local.minute, boundary, hours.timezone);
    if (open) total += Math.min(next, to) - t;
    t = next;
  }
  return total;
}

/**
 * The latest instant from which `ms` of working time have passed by `now`: a wait that began then
 * or earlier has lasted at least `ms` in working time. Null when the hours have no working time in
 * the last ~two years (an empty week): then no wait ever lasts that long.
 */
export function workingCutoff(hours: WorkingHours, now: number, ms: number): number | null {
  if (!Object.values(hours.week).some((ranges) => ranges?.length)) return null;
  if (ms <= 0) return now;
  let left = ms;
  let t = now;
  while (t > now - LOOK_BACK_MS) {
    // The minute just before `t` decides whether the stretch ending at `t` is working time.
    const p = t - 1;
    const local = wallTime(p, hours.timezone);
    const ranges = rangesOf(hours, local);
    const open = ranges.find(([a, b]) => local.minute >= a && local.minute < b);
    // The stretch's start: the open range's start, or the end of the previous range today, or midnight.
    const boundary = open ? open[0] : Math.max(0, ...ranges.map(([, b]) => b).filter((b) => b <= local.minute));
    const start = stretchStart(p, local.minute, boundary, hours.timezone);
    if (open) {
      if (t - start >= left) return t - left;
      left -= t - start;
    }
    t = start;
  }
  return null;
}

/**
 * Where the overdue leads' waits began at the latest (docs/api/automation.md): `targetMinutes`
 * before `now`, counted in working time when the account has working hours. Null: none is overdue
 * (no target, or no working time to pass it in).
 */
export function overdueCutoff(settings: { targetMinutes: number | null; hours: WorkingHours | null }, now: number): number | null {
  const { targetMinutes, hours } = settings;
  if (targetMinutes === null) return null;
  return hours ? workingCutoff(hours, now, targetMinutes * MINUTE) : now - targetMinutes * MINUTE;
}

/**
 * A lead's response time counted in working time: its wait ran from `respondedAt - responseTime`
 * to `respondedAt`. A lead whose answer's time is unknown (copied from the hosted service) keeps
 * its calendar figure.
 */
export function workingResponseTime(hours: WorkingHours, responseTime: number, respondedAt: number | null): number {
  return respondedAt === null ? responseTime : workingMsBetween(hours, respondedAt - responseTime, respondedAt);
}
