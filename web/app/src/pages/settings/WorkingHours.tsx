import { useState } from 'react';
import { ApiError, api, type ErrorDetail } from '../../api/client';
import { getLocale, t } from '../../i18n';
import { errorText } from '../../i18n/errors';
import {
  browserTimeZone,
  errorsAt,
  isUnset,
  timeZones,
  toApiEnd,
  toFormEnd,
  WEEK_DAYS,
  type WeekDay,
  type WorkingHours,
} from '../../state/automation';
import { ErrorLine, FieldErrors } from './common';

/** A day's name in the app's language (2024-01-01 was a Monday). */
function dayName(i: number): string {
  return new Intl.DateTimeFormat(getLocale(), { weekday: 'long', timeZone: 'UTC' }).format(Date.UTC(2024, 0, 1 + i));
}

/** The account's working hours: a time zone, a week of time ranges, and holidays. */
export function WorkingHoursSettings({ stored, onSaved }: { stored: WorkingHours; onSaved: (h: WorkingHours) => void }) {
  const unset = isUnset(stored);
  return <WorkingHoursForm initial={unset ? { ...stored, timezone: browserTimeZone() } : stored} unset={unset} onSaved={onSaved} />;
}

function WorkingHoursForm({ initial, unset, onSaved }: { initial: WorkingHours; unset: boolean; onSaved: (h: WorkingHours) => void }) {
  const [hours, setHours] = useState<WorkingHours>(initial);
  const [holiday, setHoliday] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [details, setDetails] = useState<ErrorDetail[]>([]);
  const [saved, setSaved] = useState(false);
  const edit = (next: WorkingHours) => {
    setSaved(false);
    setHours(next);
  };
  const setDay = (day: WeekDay, ranges: Array<[string, string]>) => edit({ ...hours, week: { ...hours.week, [day]: ranges } });
  const holidays = hours.holidays ?? [];

  const save = async () => {
    setError(null);
    setDetails([]);
    const week = Object.fromEntries(
      WEEK_DAYS.flatMap((d) => {
        const ranges = hours.week[d] ?? [];
        return ranges.length ? [[d, ranges.map(([from, to]) => [from, toApiEnd(to)])]] : [];
      }),
    );
    try {
      onSaved(await api.put<WorkingHours>('/account/working-hours', { timezone: hours.timezone, week, holidays }));
      setSaved(true);
    } catch (e) {
      setError(errorText(e));
      if (e instanceof ApiError) setDetails(e.details);
    }
  };

  return (
    <form
      className="stack card-form working-hours"
      aria-label={t('automation.hours')}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      {unset && <p className="muted small">{t('automation.hoursUnset')}</p>}
      <label>
        {t('automation.timezone')}
        <select
          name="timezone"
          value={hours.timezone}
          onChange={(e) => edit({ ...hours, timezone: e.target.value })}
          aria-describedby="timezone-error"
        >
          {timeZones(hours.timezone).map((z) => (
            <option key={z} value={z}>
              {z}
            </option>
          ))}
        </select>
      </label>
      <FieldErrors id="timezone-error" messages={errorsAt(details, 'body.timezone')} />
      <p className="muted small">{t('automation.midnightHint')}</p>
      <table className="week-grid">
        <caption className="sr-only">{t('automation.week')}</caption>
        <tbody>
          {WEEK_DAYS.map((day, di) => {
            const ranges = (hours.week[day] ?? []).map(([from, to]): [string, string] => [from, toFormEnd(to)]);
            const name = dayName(di);
            return (
              <tr key={day} data-day={day}>
                <th scope="row">{name}</th>
                <td>
                  {ranges.length === 0 && <span className="muted small">{t('automation.closed')}</span>}
                  <ul className="plain stack">
                    {ranges.map(([from, to], i) => {
                      const put = (r: [string, string]) =>
                        setDay(
                          day,
                          ranges.map((x, j) => (j === i ? r : x)),
                        );
                      return (
                        // biome-ignore lint/suspicious/noArrayIndexKey: a range has no identity but its place in the day
                        <li key={i} className="row">
                          <input
                            type="time"
                            aria-label={t('automation.from', { day: name, n: i + 1 })}
                            value={from}
                            required
                            onChange={(e) => put([e.target.value, to])}
                          />
                          <span aria-hidden="true">–</span>
                          <input
                            type="time"
                            aria-label={t('automation.to', { day: name, n: i + 1 })}
                            value={to}
                            required
                            onChange={(e) => put([from, e.target.value])}
                          />
                          <button
                            type="button"
                            className="ghost small"
                            aria-label={t('automation.removeRange', { day: name, n: i + 1 })}
                            onClick={() =>
                              setDay(
                                day,
                                ranges.filter((_, j) => j !== i),
                              )
                            }
                          >
                            ×
                          </button>
                          <FieldErrors messages={errorsAt(details, `body.week.${day}.${i}`)} />
                        </li>
                      );
                    })}
                  </ul>
                </td>
                <td>
                  <button
                    type="button"
                    className="small"
                    aria-label={t('automation.addRange', { day: name })}
                    onClick={() => setDay(day, [...ranges, ['09:00', '18:00']])}
                  >
                    {t('automation.addHours')}
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <fieldset>
        <legend>{t('automation.holidays')}</legend>
        {holidays.length === 0 && <p className="muted small">{t('automation.noHolidays')}</p>}
        <ul className="plain row wrap">
          {holidays.map((d, i) => (
            <li key={d} className="tag" data-holiday={d}>
              {d}
              <button
                type="button"
                className="ghost small"
                aria-label={t('automation.removeHoliday', { date: d })}
                onClick={() => edit({ ...hours, holidays: holidays.filter((x) => x !== d) })}
              >
                ×
              </button>
              <FieldErrors messages={errorsAt(details, `body.holidays.${i}`)} />
            </li>
          ))}
        </ul>
        <div className="row">
          <input type="date" aria-label={t('automation.holidayDate')} value={holiday} onChange={(e) => setHoliday(e.target.value)} />
          <button
            type="button"
            className="small"
            disabled={!holiday}
            onClick={() => {
              if (!holidays.includes(holiday)) edit({ ...hours, holidays: [...holidays, holiday].sort() });
              setHoliday('');
            }}
          >
            {t('automation.addHoliday')}
          </button>
        </div>
      </fieldset>
      <ErrorLine error={error} />
      <div className="row">
        <button type="submit" className="primary">
          {t('automation.saveHours')}
        </button>
        {saved && (
          <span className="ok" role="status">
            {t('app.saved')}
          </span>
        )}
      </div>
    </form>
  );
}
