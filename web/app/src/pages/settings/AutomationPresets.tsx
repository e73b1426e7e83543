import { useState } from 'react';
import { ApiError, api, type ErrorDetail } from '../../api/client';
import { useCatalog } from '../../catalog';
import { t } from '../../i18n';
import type { MessageKey } from '../../i18n/en';
import { errorText } from '../../i18n/errors';
import { errorsAt, findPreset, PRESETS, type PresetKind, presetRule, type Rule, ruleBody } from '../../state/automation';
import { ErrorLine, FieldErrors } from './common';

const TEXTS: Record<PresetKind, { title: MessageKey; hint: MessageKey; text?: MessageKey }> = {
  away: { title: 'automation.preset.away', hint: 'automation.preset.awayHint', text: 'automation.preset.awayText' },
  greeting: { title: 'automation.preset.greeting', hint: 'automation.preset.greetingHint', text: 'automation.preset.greetingText' },
  autoClose: { title: 'automation.preset.autoClose', hint: 'automation.preset.autoCloseHint' },
};

/** The ready-made rules, one switch each; their texts can be changed before switching on. */
export function Presets({ rules, reload, hoursSet }: { rules: Rule[]; reload: () => void; hoursSet: boolean }) {
  const { statuses } = useCatalog();
  const completed = new Set(statuses.filter((s) => s.type === 'completed').map((s) => s.id));
  return (
    <ul className="plain stack">
      {PRESETS.map((kind) => {
        const rule = findPreset(rules, kind, completed);
        return <PresetCard key={`${kind}-${rule?.id ?? 'new'}`} kind={kind} rule={rule} reload={reload} hoursSet={hoursSet} />;
      })}
    </ul>
  );
}

function PresetCard({ kind, rule, reload, hoursSet }: { kind: PresetKind; rule?: Rule; reload: () => void; hoursSet: boolean }) {
  const { statuses } = useCatalog();
  const completed = statuses.filter((s) => s.type === 'completed');
  const texts = TEXTS[kind];
  const reply = rule?.actions.find((a) => a.type === 'reply');
  const setStatus = rule?.actions.find((a) => a.type === 'setStatus');
  const [text, setText] = useState(reply?.type === 'reply' ? reply.text : texts.text ? t(texts.text) : '');
  const [days, setDays] = useState(rule?.idleMinutes ? Math.max(1, Math.round(rule.idleMinutes / 1440)) : 7);
  const [statusId, setStatusId] = useState(setStatus?.type === 'setStatus' ? setStatus.statusId : (completed[0]?.id ?? 0));
  const [error, setError] = useState<string | null>(null);
  const [details, setDetails] = useState<ErrorDetail[]>([]);
  const [busy, setBusy] = useState(false);
  const on = rule?.enabled ?? false;
  const title = t(texts.title);
  const blocked = kind === 'autoClose' && completed.length === 0;

  const toggle = async () => {
    setBusy(true);
    setError(null);
    setDetails([]);
    try {
      if (on && rule) await api.put(`/automation/rules/${rule.id}`, ruleBody(rule, { enabled: false }));
      else {
        const body = presetRule(kind, { name: title, text, days, statusId }, rule);
        if (rule) await api.put(`/automation/rules/${rule.id}`, body);
        else await api.post('/automation/rules', body);
      }
      reload();
    } catch (e) {
      setError(errorText(e));
      if (e instanceof ApiError) setDetails(e.details);
    } finally {
      setBusy(false);
    }
  };

  const id = `preset-${kind}`;
  return (
    <li className="card-form stack preset" data-preset={kind}>
      <div className="row">
        <h3 id={`${id}-title`} className="grow">
          {title}
        </h3>
        <button
          type="button"
          role="switch"
          aria-checked={on}
          aria-labelledby={`${id}-title`}
          className={`switch${on ? ' on' : ''}`}
          disabled={busy || blocked}
          onClick={() => void toggle()}
        >
          {on ? t('automation.on') : t('automation.off')}
        </button>
      </div>
      <p className="muted small">{t(texts.hint)}</p>
      {kind === 'away' && !hoursSet && <p className="small warn">{t('automation.preset.awayNoHours')}</p>}
      {kind !== 'autoClose' ? (
        <label>
          {t('automation.replyText')}
          <textarea
            value={text}
            rows={3}
            maxLength={4096}
            disabled={on}
            onChange={(e) => setText(e.target.value)}
            aria-describedby={`${id}-error`}
          />
        </label>
      ) : blocked ? (
        <p className="muted small">{t('automation.noCompleted')}</p>
      ) : (
        <div className="row wrap">
          <label>
            {t('automation.idleDays')}
            <input
              type="number"
              min={1}
              max={365}
              value={days}
              disabled={on}
              onChange={(e) => setDays(Math.min(365, Math.max(1, Number(e.target.value) || 1)))}
            />
          </label>
          <label>
            {t('automation.closeTo')}
            <select value={statusId} disabled={on} onChange={(e) => setStatusId(Number(e.target.value))}>
              {completed.map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
            </select>
          </label>
        </div>
      )}
      {kind !== 'autoClose' && (
        <p className="muted small">{t('automation.placeholders', { name: '{customer.name}', lead: '{lead.id}' })}</p>
      )}
      <FieldErrors id={`${id}-error`} messages={errorsAt(details, 'body.actions')} />
      <ErrorLine error={error} />
    </li>
  );
}
