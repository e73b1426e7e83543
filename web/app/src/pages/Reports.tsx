import { useCallback, useEffect, useState, type FormEvent } from 'react';
import { api, query } from '../api/client';
import type { ReportStatistics } from '../api/types';
import { employeeName, useCatalog } from '../catalog';
import { t, formatNumber } from '../i18n';
import { dayBound, fillDays, formatDuration, niceMax, reportCsv } from '../state/reports';
import { activeFilterCount, filterParams, noFilters, type Filters } from '../state/leads';
import { FilterBar } from './FilterBar';
import '../sales.css';
import { channelName } from '../channels/ChannelName';
import { errorText } from '../i18n/errors';

/** New leads per day as bars in plain SVG: a chart library would weigh more than this page. */
function DayChart({ points }: { points: Array<{ date: string; count: number }> }) {
  const total = points.reduce((n, p) => n + p.count, 0);
  if (!total) return <p className="muted">{t('reports.noNewLeads')}</p>;
  const max = niceMax(Math.max(...points.map((p) => p.count)));
  const W = 640;
  const H = 180;
  const pad = { l: 32, b: 22, t: 8 };
  const bw = (W - pad.l) / points.length;
  const y = (v: number) => pad.t + (H - pad.t - pad.b) * (1 - v / max);
  const every = Math.max(1, Math.ceil(points.length / 8));
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={t('reports.chartLabel', { count: total })}>
        {[0, max / 2, max].map((v) => (
          <g key={v}>
            <line x1={pad.l} x2={W} y1={y(v)} y2={y(v)} className="grid" />
            <text x={pad.l - 4} y={y(v) + 4} textAnchor="end" className="axis">
              {Number.isInteger(v) ? v : v.toFixed(1)}
            </text>
          </g>
        ))}
        {points.map((p, i) => (
          <g key={p.date}>
            <rect x={pad.l + i * bw + 1} y={y(p.count)} width={Math.max(1, bw - 2)} height={y(0) - y(p.count)} className="bar">
              <title>{`${p.date}: ${p.count}`}</title>
            </rect>
            {i % every === 0 && (
              <text x={pad.l + i * bw + bw / 2} y={H - 6} textAnchor="middle" className="axis">
                {p.date.slice(5)}
              </text>
            )}
          </g>
        ))}
      </svg>
      {/* The same numbers as a table for screen readers and copying. */}
      <details>
        <summary className="small">{t('reports.newLeads')}</summary>
        <table className="report-table">
          <tbody>
            {points
              .filter((p) => p.count)
              .map((p) => (
                <tr key={p.date}>
                  <th scope="row">{p.date}</th>
                  <td>{p.count}</td>
                </tr>
              ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

function BreakdownTable({
  caption,
  head,
  rows,
}: {
  caption: string;
  head: string;
  rows: Array<{ key: string; name: string; count: number; median: number | null }>;
}) {
  return (
    <table className="report-table">
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">{head}</th>
          <th scope="col">{t('reports.leads')}</th>
          <th scope="col">{t('reports.median')}</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key}>
            <th scope="row">{r.name}</th>
            <td>{formatNumber(r.count)}</td>
            <td>{formatDuration(r.median)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);

/** Reports: GET /v1.3/leads/statistics with the list filters and a creation date range; CSV download. */
export default function ReportsPage() {
  const { statuses, employees } = useCatalog();
  const [filters, setFilters] = useState<Filters>(noFilters);
  const [range, setRange] = useState({ from: daysAgo(29), to: today() });
  const [draft, setDraft] = useState(range);
  const [showFilters, setShowFilters] = useState(false);
  const [stats, setStats] = useState<ReportStatistics | null>(null);
  const [target, setTarget] = useState<number | null>(null);
  const [timeIn, setTimeIn] = useState<'calendar' | 'working'>('calendar');
  const [error, setError] = useState<string | null>(null);

  const load = useCallback(async () => {
    setError(null);
    try {
      const params = {
        ...filterParams('all', filters),
        createdFrom: dayBound(range.from, false),
        createdTo: dayBound(range.to, true),
        breakdowns: true,
        responseTimeIn: timeIn,
      };
      setStats(await api.get<ReportStatistics>(`/leads/statistics${query(params)}`));
    } catch (e) {
      setError(errorText(e));
    }
  }, [filters, range, timeIn]);
  useEffect(() => void load(), [load]);
  useEffect(() => {
    api
      .get<{ minutes: number | null }>('/account/first-response-target')
      .then((r) => setTarget(r.minutes))
      .catch(() => setTarget(null));
  }, []);

  const nameOf = (id: number | null) => (id === null ? t('reports.unassigned') : (employeeName(employees, id) ?? `#${id}`));
  const download = () => {
    if (!stats) return;
    const blob = new Blob([reportCsv(stats, { employee: nameOf })], { type: 'text/csv;charset=utf-8' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `parley-report-${range.from}-${range.to}.csv`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setRange(draft);
  };
  const nFilters = activeFilterCount(filters);

  return (
    <div className="page reports">
      <h1>{t('reports.title')}</h1>
      <form className="row wrap" onSubmit={submit}>
        <label className="field inline">
          {t('reports.from')}
          <input type="date" value={draft.from} max={draft.to} onChange={(e) => setDraft({ ...draft, from: e.target.value })} />
        </label>
        <label className="field inline">
          {t('reports.to')}
          <input type="date" value={draft.to} min={draft.from} onChange={(e) => setDraft({ ...draft, to: e.target.value })} />
        </label>
        <button type="submit" className="primary small">
          {t('reports.apply')}
        </button>
        <button type="button" className="ghost small" aria-expanded={showFilters} onClick={() => setShowFilters((v) => !v)}>
          {nFilters ? t('filters.count', { count: nFilters }) : t('filters.title')}
        </button>
        <button type="button" className="small" onClick={download} disabled={!stats}>
          {t('reports.csv')}
        </button>
      </form>
      {/* Response times counted in calendar or working time (docs/api/automation.md "First-response target"). */}
      <fieldset className="row wrap time-in">
        <legend className="small">{t('reports.timeIn')}</legend>
        {(['calendar', 'working'] as const).map((v) => (
          <label key={v} className="check">
            <input type="radio" name="response-time-in" value={v} checked={timeIn === v} onChange={() => setTimeIn(v)} />
            {v === 'calendar' ? t('reports.calendarTime') : t('reports.workingTime')}
          </label>
        ))}
      </fieldset>
      {showFilters && <FilterBar list="all" value={filters} onChange={setFilters} statuses={statuses} />}
      {error && (
        <p className="error" role="alert">
          {t('app.error', { message: error })}
        </p>
      )}
      {stats && (
        <div className="report-grid" aria-live="polite">
          <section className="report-card">
            <h2>{t('reports.responseTime')}</h2>
            <p className="big-number" data-testid="median">
              {formatDuration(stats.responseTime.median)}
            </p>
            <p className="muted small">{t('reports.responseCount', { count: stats.responseTime.count })}</p>
          </section>
          {target !== null && stats.responseTime.withinTarget !== undefined && (
            <section className="report-card">
              <h2>{t('reports.withinTarget', { minutes: target })}</h2>
              <p className="big-number" data-testid="within-target">
                {stats.responseTime.count ? `${Math.round((100 * stats.responseTime.withinTarget) / stats.responseTime.count)}%` : '—'}
              </p>
              <p className="muted small">
                {t('reports.withinTargetCount', { within: stats.responseTime.withinTarget, count: stats.responseTime.count })}
              </p>
            </section>
          )}
          <section className="report-card">
            <h2>{t('reports.lists')}</h2>
            <dl className="stat-list">
              {(['inbox', 'active', 'completed', 'all'] as const).map((l) => (
                <div key={l}>
                  <dt>{t(`lists.${l}`)}</dt>
                  <dd>{stats.lists[l]}</dd>
                </div>
              ))}
            </dl>
          </section>
          <section className="report-card wide">
            <h2>{t('reports.newLeads')}</h2>
            <DayChart points={fillDays(stats.newLeads, range.from, range.to)} />
          </section>
          <section className="report-card">
            <h2>{t('reports.statuses')}</h2>
            <dl className="stat-list">
              {stats.statuses.map((s) => (
                <div key={s.id}>
                  <dt>{s.name}</dt>
                  <dd>{s.count}</dd>
                </div>
              ))}
            </dl>
          </section>
          <section className="report-card">
            <BreakdownTable
              caption={t('reports.employees')}
              head={t('reports.employee')}
              rows={stats.employees.map((e) => ({
                key: String(e.userId),
                name: nameOf(e.userId),
                count: e.count,
                median: e.responseTime.median,
              }))}
            />
          </section>
          <section className="report-card">
            <BreakdownTable
              caption={t('reports.channels')}
              head={t('reports.channel')}
              rows={stats.channels.map((c) => ({ key: c.type, name: channelName(c.type), count: c.count, median: c.responseTime.median }))}
            />
          </section>
        </div>
      )}
    </div>
  );
}
