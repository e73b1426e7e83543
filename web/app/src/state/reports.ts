import type { ReportStatistics } from '../api/types';
import { t } from '../i18n';
import { channelName } from '../channels/ChannelName';

/** A duration in ms as people read it, in the app's language: "45 s", "12 min", "3 h 20 min", "2 d 4 h". */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return t('duration.seconds', { n: s });
  const m = Math.round(s / 60);
  if (m < 60) return t('duration.minutes', { n: m });
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? t('duration.hoursMinutes', { h, m: m % 60 }) : t('duration.hours', { n: h });
  const d = Math.floor(h / 24);
  return h % 24 ? t('duration.daysHours', { d, h: h % 24 }) : t('duration.days', { n: d });
}

/** Every UTC day from `from` to `to` (YYYY-MM-DD, inclusive) with its count; missing days are 0. */
export function fillDays(
  points: Array<{ date: string; count: number }>,
  from?: string,
  to?: string,
): Array<{ date: string; count: number }> {
  if (!points.length && (!from || !to)) return [];
  const start = Date.parse(`${from ?? points[0].date}T00:00:00Z`);
  const end = Date.parse(`${to ?? points[points.length - 1].date}T00:00:00Z`);
  if (!(end >= start)) return points;
  const counts = new Map(points.map((p) => [p.date, p.count]));
  const out: Array<{ date: string; count: number }> = [];
  // At most a few years of days: a wider range is shown as the points only.
  if ((end - start) / 86_400_000 > 1500) return points;
  for (let t = start; t <= end; t += 86_400_000) {
    const date = new Date(t).toISOString().slice(0, 10);
    out.push({ date, count: counts.get(date) ?? 0 });
  }
  return out;
}

/** A "nice" upper bound for a chart axis: 1, 2 or 5 times a power of ten, at least `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const f of [1, 2, 5, 10]) if (f * p >= max) return f * p;
  return 10 * p;
}

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break; formula starts defused. */
export function csvField(v: string | number | null): string {
  let s = v === null ? '' : String(v);
  // A cell starting with = + - @ is a formula to spreadsheet programs: make it text.
  if (/^[=+\-@\t\r]/.test(s) && typeof v === 'string') s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv(rows: Array<Array<string | number | null>>): string {
  return `${rows.map((r) => r.map(csvField).join(',')).join('\r\n')}\r\n`;
}

const LIST_NAMES = { inbox: 'lists.inbox', active: 'lists.active', completed: 'lists.completed', all: 'lists.all' } as const;

/** The report as one CSV in the app's language: a section column keeps the tables apart in one sheet. */
export function reportCsv(stats: ReportStatistics, names: { employee: (id: number | null) => string }): string {
  const rows: Array<Array<string | number | null>> = [
    [t('csv.section'), t('csv.name'), t('csv.leads'), t('csv.medianResponseMs'), t('csv.answeredLeads')],
  ];
  for (const [list, n] of Object.entries(stats.lists))
    rows.push([t('csv.list'), list in LIST_NAMES ? t(LIST_NAMES[list as keyof typeof LIST_NAMES]) : list, n, null, null]);
  for (const s of stats.statuses) rows.push([t('csv.status'), s.name, s.count, null, null]);
  for (const d of stats.newLeads) rows.push([t('csv.newLeads'), d.date, d.count, null, null]);
  rows.push([t('csv.responseTime'), t('csv.all'), stats.lists.all, stats.responseTime.median, stats.responseTime.count]);
  for (const e of stats.employees)
    rows.push([t('csv.employee'), names.employee(e.userId), e.count, e.responseTime.median, e.responseTime.count]);
  for (const c of stats.channels) rows.push([t('csv.channel'), channelName(c.type), c.count, c.responseTime.median, c.responseTime.count]);
  return toCsv(rows);
}

/** A YYYY-MM-DD date input value as the Unix ms of that UTC day's start (or end). */
export function dayBound(value: string, end: boolean): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return undefined;
  const t = Date.parse(`${value}T00:00:00Z`);
  if (Number.isNaN(t)) return undefined;
  return end ? t + 86_400_000 - 1 : t;
}
