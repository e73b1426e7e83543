import { useState } from 'react';
import { api } from '../../api/client';
import type { Integration } from '../../api/types';
import { useCatalog } from '../../catalog';
import { ChannelName, channelName } from '../../channels/ChannelName';
import { t } from '../../i18n';
import { type Rule, sortRules } from '../../state/automation';
import { ErrorLine, useAction, useResource } from './common';
import { Presets } from './AutomationPresets';
import { RuleList } from './AutomationRules';
import { WorkingHoursSettings } from './WorkingHours';

/**
 * Settings -> Automation (docs/api/automation.md): the ready-made rules with one switch each, how
 * each channel's new leads are shared, working hours, and the account's rules with their runs.
 */
export function AutomationSettings() {
  const rules = useResource(() => api.get<Rule[]>('/automation/rules'));
  const list = sortRules(rules.data ?? []);
  const reload = () => void rules.reload();
  return (
    <div className="stack automation">
      <ErrorLine error={rules.error} />
      <section aria-labelledby="automation-presets">
        <h2 id="automation-presets">{t('automation.presets')}</h2>
        {rules.data && <Presets rules={list} reload={reload} />}
      </section>
      <section aria-labelledby="automation-distribution">
        <h2 id="automation-distribution">{t('automation.distribution')}</h2>
        <p className="muted small">{t('automation.distributionHint')}</p>
        <DistributionList />
      </section>
      <section aria-labelledby="automation-hours">
        <h2 id="automation-hours">{t('automation.hours')}</h2>
        <WorkingHoursSettings />
      </section>
      <section aria-labelledby="automation-rules">
        <h2 id="automation-rules">{t('automation.rules')}</h2>
        {rules.data && <RuleList rules={list} reload={reload} />}
      </section>
    </div>
  );
}

type Mode = 'off' | 'round_robin' | 'least_busy';
interface Distribution {
  mode: Mode;
  employees?: number[];
  onlyAvailable?: boolean;
}
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
  const { run, error, busy } = useAction();
  const value = draft ?? stored.data;
  const confirmed = employees.filter((e) => e.confirmed);
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
            void run(async () => stored.setData(await api.put<Distribution>(`/integrations/${integration.id}/distribution`, value))).then(
              (ok) => {
                if (ok) {
                  setDraft(null);
                  setSaved(true);
                }
              },
            );
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
