import { useState } from 'react';
import { api } from '../../api/client';
import { t, formatDateTime } from '../../i18n';
import { linkProps } from '../../router';
import type { RuleRun } from '../../api/types';
import { moveRule, type Rule, ruleBody } from '../../state/automation';
import { confirmDelete, ErrorLine, useAction, useResource } from './common';
import { actionLabel, RuleEditor } from './RuleEditor';

/** The account's rules in the order they run: switch, order, edit, delete, and each one's runs. */
export function RuleList({ rules, reload }: { rules: Rule[]; reload: () => void }) {
  const [editing, setEditing] = useState<Rule | 'new' | null>(null);
  const [runsOf, setRunsOf] = useState<number | null>(null);
  const { run, error, busy } = useAction();
  const move = (id: number, by: -1 | 1) =>
    void run(async () => {
      for (const { rule, order } of moveRule(rules, id, by)) await api.put(`/automation/rules/${rule.id}`, ruleBody(rule, { order }));
    }).then(reload);

  return (
    <div className="stack">
      <ErrorLine error={error} />
      {rules.length === 0 && <p className="muted">{t('automation.noRules')}</p>}
      <ol className="plain stack rule-list">
        {rules.map((r, i) => (
          <li key={r.id} className="card-form stack" data-rule={r.id}>
            <div className="row wrap">
              <strong className="grow">{r.name}</strong>
              <span className="chip-type">{t(`automation.event.${r.event}`)}</span>
              <EnabledSwitch
                key={`${r.id}-${r.enabled}`}
                rule={r}
                disabled={busy}
                save={(enabled) =>
                  run(() => api.put(`/automation/rules/${r.id}`, ruleBody(r, { enabled }))).then((ok) => {
                    reload();
                    return ok;
                  })
                }
              />
              <button
                type="button"
                className="ghost icon"
                disabled={busy || i === 0}
                aria-label={t('automation.up', { name: r.name })}
                onClick={() => move(r.id, -1)}
              >
                ↑
              </button>
              <button
                type="button"
                className="ghost icon"
                disabled={busy || i === rules.length - 1}
                aria-label={t('automation.down', { name: r.name })}
                onClick={() => move(r.id, 1)}
              >
                ↓
              </button>
              <button
                type="button"
                className="small"
                aria-expanded={runsOf === r.id}
                aria-label={t('automation.runsOf', { name: r.name })}
                onClick={() => setRunsOf(runsOf === r.id ? null : r.id)}
              >
                {t('automation.runs')}
              </button>
              <button type="button" className="small" aria-label={t('automation.editRule', { name: r.name })} onClick={() => setEditing(r)}>
                {t('app.edit')}
              </button>
              <button
                type="button"
                className="ghost small danger"
                aria-label={t('automation.deleteRule', { name: r.name })}
                onClick={() => confirmDelete(r.name) && void run(() => api.del(`/automation/rules/${r.id}`)).then(reload)}
              >
                {t('app.delete')}
              </button>
            </div>
            {runsOf === r.id && <RuleRuns rule={r} />}
          </li>
        ))}
      </ol>
      {editing ? (
        <RuleEditor
          key={editing === 'new' ? 'new' : editing.id}
          rule={editing === 'new' ? undefined : editing}
          onDone={(changed) => {
            setEditing(null);
            if (changed) reload();
          }}
        />
      ) : (
        <div>
          <button type="button" className="primary" onClick={() => setEditing('new')}>
            {t('automation.newRule')}
          </button>
        </div>
      )}
    </div>
  );
}

/**
 * A rule's switch: it moves at once and goes back when the server refuses the change (the list is
 * reloaded either way, and a new answer from the server starts it afresh through its key).
 */
function EnabledSwitch({ rule, disabled, save }: { rule: Rule; disabled: boolean; save: (enabled: boolean) => Promise<boolean> }) {
  const [enabled, setEnabled] = useState(rule.enabled);
  return (
    <label className="check">
      <input
        type="checkbox"
        role="switch"
        aria-checked={enabled}
        checked={enabled}
        disabled={disabled}
        onChange={(e) => {
          const next = e.target.checked;
          setEnabled(next);
          void save(next).then((ok) => ok || setEnabled(!next));
        }}
      />
      {t('automation.enabled')}
      <span className="sr-only"> {rule.name}</span>
    </label>
  );
}

/** A rule's latest runs, newest first, with each action's outcome. */
function RuleRuns({ rule }: { rule: Rule }) {
  const runs = useResource(() => api.get<{ runs: RuleRun[] }>(`/automation/rules/${rule.id}/runs`));
  const list = runs.data?.runs ?? [];
  return (
    <section className="stack rule-runs" aria-label={t('automation.runsOf', { name: rule.name })}>
      <div className="row">
        <h4 className="grow">{t('automation.runsTitle')}</h4>
        <button type="button" className="small ghost" onClick={() => void runs.reload()}>
          {t('automation.refresh')}
        </button>
      </div>
      <ErrorLine error={runs.error} />
      {runs.data && list.length === 0 && <p className="muted small">{t('automation.noRuns')}</p>}
      <ul className="plain stack">
        {list.map((r) => (
          <li key={r.eventId} className="rule-run" data-event={r.eventId}>
            <span className="muted small">{formatDateTime(r.at)}</span>{' '}
            {r.leadId !== null && <a {...linkProps(`/leads/${r.leadId}`)}>{t('automation.lead', { id: r.leadId })}</a>}
            <ul className="plain row wrap">
              {r.actions.map((a, i) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a run's actions are its rule's, in order
                <li key={i} className={a.ok ? 'ok small' : 'error small'}>
                  {actionLabel(a.type)}: {a.ok ? t('automation.actionOk') : t('automation.actionFailed', { error: a.error ?? '' })}
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </section>
  );
}
