import type { ErrorDetail } from '../errors.js';

export const WEEK_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type WeekDay = (typeof WEEK_DAYS)[number];

/** `["09:00", "18:00"]`: from the first time up to (not including) the second, local time. */
export type TimeRange = [string, string];

export interface WorkingHours {
  /** An IANA time zone name. */
  timezone: string;
  /** A day missing is closed; an empty week is closed all week. */
  week: Partial<Record<WeekDay, TimeRange[]>>;
  /** Local dates (YYYY-MM-DD) closed all day. */
  holidays: string[];
}

/** What an account without working hours has: open around the clock. */
export const ALWAYS_OPEN: WorkingHours = {
  timezone: 'UTC',
  week: Object.fromEntries(WEEK_DAYS.map((d) => [d, [['00:00', '24:00']]])),
  holidays: [],
};

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** Problems the schema cannot see: the time zone, ranges that end before they start, dates that do not exist. */
export function workingHoursProblems(hours: WorkingHours): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  if (!isTimeZone(hours.timezone)) out.push({ path: 'body.timezone', message: 'is not an IANA time zone name' });
  for (const day of WEEK_DAYS) {
    (hours.week[day] ?? []).forEach(([from, to], i) => {
      if (minutesOf(to) <= minutesOf(from)) out.push({ path: `body.week.${day}.${i}`, message: 'must end after it starts' });
    });
  }
  hours.holidays.forEach((date, i) => {
    const d = new Date(`${date}T00:00:00Z`);
    if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== date)
      out.push({ path: `body.holidays.${i}`, message: 'is not a date' });
  });
  return out;
}

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The local date, weekday and minute of the day of an instant in a time zone. */
export function localTime(at: number, timezone: string): { date: string; day: WeekDay; minute: number } {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
    });
    formatters.set(timezone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(at).map((p) => [p.type, p.value]));
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    day: String(parts.weekday).toLowerCase().slice(0, 3) as WeekDay,
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

/** Whether the instant falls in the working hours (a holiday is closed all day). */
export function isWorkingTime(hours: WorkingHours, at: number): boolean {
  const local = localTime(at, hours.timezone);
  if (hours.holidays.includes(local.date)) return false;
  return (hours.week[local.day] ?? []).some(([from, to]) => local.minute >= minutesOf(from) && local.minute < minutesOf(to));
}
