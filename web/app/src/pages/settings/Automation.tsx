import { useState } from 'react';
import { ApiError, api, type ErrorDetail } from '../../api/client';
import type { Distribution, Integration } from '../../api/types';
import { useCatalog } from '../../catalog';
import { ChannelName, channelName } from '../../channels/ChannelName';
import { t } from '../../i18n';
import { errorText } from '../../i18n/errors';
import { errorsAt, isUnset, type Rule, sortRules, type WorkingHours } from '../../state/automation';
import { ErrorLine, FieldErrors, useResource } from './common';
import { Presets } from './AutomationPresets';
import { RuleList } from './AutomationRules';
import { WorkingHoursSettings } from './WorkingHours';

/**
 * Settings -> Automation (docs/api/automation.md): the ready-made rules with one switch each, how
 * each channel's new leads are shared, working hours, and the account's rules with their runs.
 */
export function AutomationSettings() {
  const rules = useResource(() => api.get<Rule[]>('/automation/rules'));
  const hours = useResource(() => api.get<WorkingHours>('/account/working-hours'));
  const list = sortRules(rules.data ?? []);
  const reload = () => void rules.reload();
  return (
    <div className="stack automation">
      <ErrorLine error={rules.error} />
      <section aria-labelledby="automation-presets">
        <h2 id="automation-presets">{t('automation.presets')}</h2>
        {rules.data && hours.data && <Presets rules={list} reload={reload} hoursSet={!isUnset(hours.data)} />}
      </section>
      <section aria-labelledby="automation-distribution">
        <h2 id="automation-distribution">{t('automation.distribution')}</h2>
        <p className="muted small">{t('automation.distributionHint')}</p>
        <DistributionList />
      </section>
      <section aria-labelledby="automation-hours">
        <h2 id="automation-hours">{t('automation.hours')}</h2>
        <ErrorLine error={hours.error} />
        {hours.data && <WorkingHoursSettings stored={hours.data} onSaved={hours.setData} />}
      </section>
      <section aria-labelledby="automation-rules">
        <h2 id="automation-rules">{t('automation.rules')}</h2>
        {rules.data && <RuleList rules={list} reload={reload} />}
      </section>
    </div>
  );
}

type Mode = Distribution['mode'];
const MODES: Mode[] = ['off', 'round_robin', 'least_busy'];

function DistributionList() {
  const { integrations } = useCatalog();
  if (integrations.length === 0) return <p className="muted">{t('automation.noChannels')}</p>;
  return (
    <ul className="plain stack">
      {integrations.map((i) => (
        <DistributionCard key={i.id} integration={i} />
      ))}
    </ul>
  );
}

function DistributionCard({ integration }: { integration: Integration }) {
  const { employees } = useCatalog();
  const stored = useResource(() => api.get<Distribution>(`/integrations/${integration.id}/distribution`));
  const [draft, setDraft] = useState<Distribution | null>(null);
  const [saved, setSaved] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [details, setDetails] = useState<ErrorDetail[]>([]);
  const [busy, setBusy] = useState(false);
  const value = draft ?? stored.data;
  // Who may take part: confirmed employees who reach the integration (the owner reaches every one).
  const confirmed = employees.filter(
    (e) => e.confirmed && (e.role === 'owner' || e.sources.length === 0 || e.sources.some((s) => s.saId === integration.id)),
  );
  const save = async (body: Distribution) => {
    setBusy(true);
    setError(null);
    setDetails([]);
    try {
      stored.setData(await api.put<Distribution>(`/integrations/${integration.id}/distribution`, body));
      setDraft(null);
      setSaved(true);
    } catch (e) {
      setError(errorText(e));
      if (e instanceof ApiError) setDetails(e.details);
    } finally {
      setBusy(false);
    }
  };
  const change = (patch: Partial<Distribution>) => {
    setSaved(false);
    if (value) setDraft({ ...value, ...patch });
  };
  const everyone = value?.employees === undefined;
  const label = integration.login ? `${integration.login}` : '';
  return (
    <li className="card-form stack" data-distribution={integration.id}>
      <h3 className="row">
        <ChannelName type={integration.type} />
        {label && <span className="muted small">{label}</span>}
      </h3>
      <ErrorLine error={stored.error ?? error} />
      {value && (
        <form
          className="stack"
          aria-label={t('automation.distributionOf', { channel: label || channelName(integration.type) })}
          onSubmit={(e) => {
            e.preventDefault();
            void save(value);
          }}
        >
          <label>
            {t('automation.mode')}
            <select name="distribution-mode" value={value.mode} onChange={(e) => change({ mode: e.target.value as Mode })}>
              {MODES.map((m) => (
                <option key={m} value={m}>
                  {t(`automation.mode.${m}`)}
                </option>
              ))}
            </select>
          </label>
          {value.mode !== 'off' && (
            <>
              <fieldset>
                <legend>{t('automation.who')}</legend>
                <label className="check">
                  <input
                    type="checkbox"
                    checked={everyone}
                    onChange={(e) => change({ employees: e.target.checked ? undefined : confirmed.map((x) => x.id) })}
                  />
                  {t('automation.everyone')}
                </label>
                {!everyone &&
                  confirmed.map((emp) => (
                    <label className="check" key={emp.id}>
                      <input
                        type="checkbox"
                        checked={value.employees?.includes(emp.id) ?? false}
                        onChange={(e) =>
                          change({
                            employees: e.target.checked
                              ? [...(value.employees ?? []), emp.id]
                              : (value.employees ?? []).filter((x) => x !== emp.id),
                          })
                        }
                      />
                      {emp.name || emp.login}
                      {!emp.available && <span className="presence"> ({t('availability.away')})</span>}
                      <FieldErrors messages={errorsAt(details, `body.employees.${value.employees?.indexOf(emp.id) ?? -1}`)} />
                    </label>
                  ))}
              </fieldset>
              <label className="check">
                <input
                  type="checkbox"
                  checked={value.onlyAvailable !== false}
                  onChange={(e) => change({ onlyAvailable: e.target.checked })}
                />
                {t('automation.onlyAvailable')}
              </label>
            </>
          )}
          <div className="row">
            <button type="submit" className="primary" disabled={busy || !draft}>
              {t('app.save')}
            </button>
            {saved && (
              <span className="ok" role="status">
                {t('app.saved')}
              </span>
            )}
          </div>
        </form>
      )}
    </li>
  );
}
