import { useState } from 'react';
import { ApiError, api, type ErrorDetail } from '../../api/client';
import { useCatalog } from '../../catalog';
import { channelName } from '../../channels/ChannelName';
import { CHANNEL_TYPES } from '../../channels/channel-types';
import { t } from '../../i18n';
import { errorText } from '../../i18n/errors';
import {
  ACTION_TYPES,
  type Action,
  type ActionType,
  CONDITION_FIELDS,
  type Condition,
  type ConditionField,
  errorsAt,
  FIELDS,
  newAction,
  newCondition,
  RULE_EVENTS,
  type Rule,
  type RuleBody,
  type RuleEvent,
  ruleBody,
} from '../../state/automation';
import { ErrorLine, FieldErrors } from './common';

/** The editor of one rule: its event, conditions and actions; a 400 shows at the part it names. */
export function RuleEditor({ rule, onDone }: { rule?: Rule; onDone: (changed: boolean) => void }) {
  const { employees, statuses } = useCatalog();
  const [draft, setDraft] = useState<RuleBody>(
    rule ? ruleBody(rule) : { name: '', enabled: true, event: 'message.incoming', conditions: [], actions: [] },
  );
  const [error, setError] = useState<string | null>(null);
  const [details, setDetails] = useState<ErrorDetail[]>([]);
  const [busy, setBusy] = useState(false);
  const firsts = { userId: employees.find((e) => e.confirmed)?.id, statusId: statuses[0]?.id };
  const edit = (patch: Partial<RuleBody>) => setDraft({ ...draft, ...patch });
  const setCondition = (i: number, c: Condition) => edit({ conditions: draft.conditions.map((x, j) => (j === i ? c : x)) });
  const setAction = (i: number, a: Action) => edit({ actions: draft.actions.map((x, j) => (j === i ? a : x)) });
  const moveAction = (i: number, by: -1 | 1) => {
    const list = [...draft.actions];
    const [a] = list.splice(i, 1);
    list.splice(i + by, 0, a);
    edit({ actions: list });
  };

  const save = async () => {
    setBusy(true);
    setError(null);
    setDetails([]);
    try {
      const body = { ...draft, name: draft.name.trim() };
      if (body.event !== 'lead.idle') delete body.idleMinutes;
      if (rule) await api.put(`/automation/rules/${rule.id}`, body);
      else await api.post('/automation/rules', body);
      onDone(true);
    } catch (e) {
      setError(errorText(e));
      if (e instanceof ApiError) setDetails(e.details);
    } finally {
      setBusy(false);
    }
  };
  const at = (path: string) => errorsAt(details, path);
  const described = (path: string) => (at(path).length ? `${path.replaceAll('.', '-')}-error` : undefined);

  return (
    <form
      className="card-form stack rule-editor"
      aria-label={rule ? t('automation.editRule', { name: rule.name }) : t('automation.newRule')}
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <h3>{rule ? t('automation.editRule', { name: rule.name }) : t('automation.newRule')}</h3>
      <label>
        {t('automation.ruleName')}
        <input
          name="rule-name"
          value={draft.name}
          required
          maxLength={200}
          aria-invalid={at('body.name').length > 0}
          aria-describedby={described('body.name')}
          onChange={(e) => edit({ name: e.target.value })}
        />
      </label>
      <FieldErrors id={described('body.name')} messages={at('body.name')} />
      <div className="row wrap">
        <label>
          {t('automation.event')}
          <select name="rule-event" value={draft.event} onChange={(e) => edit({ event: e.target.value as RuleEvent })}>
            {RULE_EVENTS.map((ev) => (
              <option key={ev} value={ev}>
                {t(`automation.event.${ev}`)}
              </option>
            ))}
          </select>
        </label>
        {draft.event === 'lead.idle' && (
          <label>
            {t('automation.idleMinutes')}
            <input
              type="number"
              name="rule-idle"
              min={1}
              max={525600}
              required
              value={draft.idleMinutes ?? ''}
              aria-invalid={at('body.idleMinutes').length > 0}
              aria-describedby={described('body.idleMinutes')}
              onChange={(e) => edit({ idleMinutes: e.target.value ? Number(e.target.value) : undefined })}
            />
          </label>
        )}
        <label className="check">
          <input type="checkbox" checked={draft.enabled} onChange={(e) => edit({ enabled: e.target.checked })} />
          {t('automation.enabled')}
        </label>
      </div>
      <FieldErrors id={described('body.event')} messages={at('body.event')} />
      <FieldErrors id={described('body.idleMinutes')} messages={at('body.idleMinutes')} />

      <fieldset className="stack">
        <legend>{t('automation.conditions')}</legend>
        {draft.conditions.length === 0 && <p className="muted small">{t('automation.noConditions')}</p>}
        <ol className="plain stack">
          {draft.conditions.map((c, i) => {
            const path = `body.conditions.${i}`;
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: conditions are edited in place; the place is their identity
              <li key={i} className="row wrap" data-condition={i}>
                <select
                  aria-label={t('automation.field', { n: i + 1 })}
                  value={c.field}
                  onChange={(e) => setCondition(i, newCondition(e.target.value as ConditionField))}
                >
                  {FIELDS.map((f) => (
                    <option key={f} value={f}>
                      {t(`automation.field.${f}`)}
                    </option>
                  ))}
                </select>
                <select
                  aria-label={t('automation.op', { n: i + 1 })}
                  value={c.op}
                  onChange={(e) => setCondition(i, { ...c, op: e.target.value })}
                >
                  {CONDITION_FIELDS[c.field].map((op) => (
                    <option key={op} value={op}>
                      {t(`automation.op.${op}`)}
                    </option>
                  ))}
                </select>
                <ConditionValue
                  condition={c}
                  n={i + 1}
                  invalid={at(path).length > 0}
                  describedBy={described(path)}
                  onChange={(value) => setCondition(i, { ...c, value })}
                />
                <button
                  type="button"
                  className="ghost small"
                  aria-label={t('automation.removeCondition', { n: i + 1 })}
                  onClick={() => edit({ conditions: draft.conditions.filter((_, j) => j !== i) })}
                >
                  ×
                </button>
                <FieldErrors id={described(path)} messages={at(path)} />
              </li>
            );
          })}
        </ol>
        <div>
          <button type="button" className="small" onClick={() => edit({ conditions: [...draft.conditions, newCondition('message.text')] })}>
            {t('automation.addCondition')}
          </button>
        </div>
      </fieldset>

      <fieldset className="stack">
        <legend>{t('automation.actions')}</legend>
        <ol className="plain stack">
          {draft.actions.map((a, i) => {
            const path = `body.actions.${i}`;
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: actions are edited in place; the place is their identity
              <li key={i} className="row wrap" data-action={i}>
                <select
                  aria-label={t('automation.actionType', { n: i + 1 })}
                  value={a.type}
                  onChange={(e) => setAction(i, newAction(e.target.value as ActionType, firsts))}
                >
                  {ACTION_TYPES.map((ty) => (
                    <option key={ty} value={ty}>
                      {actionLabel(ty)}
                    </option>
                  ))}
                </select>
                <ActionValue
                  action={a}
                  n={i + 1}
                  invalid={at(path).length > 0}
                  describedBy={described(path)}
                  onChange={(x) => setAction(i, x)}
                />
                <button
                  type="button"
                  className="ghost icon"
                  disabled={i === 0}
                  aria-label={t('automation.actionUp', { n: i + 1 })}
                  onClick={() => moveAction(i, -1)}
                >
                  ↑
                </button>
                <button
                  type="button"
                  className="ghost icon"
                  disabled={i === draft.actions.length - 1}
                  aria-label={t('automation.actionDown', { n: i + 1 })}
                  onClick={() => moveAction(i, 1)}
                >
                  ↓
                </button>
                <button
                  type="button"
                  className="ghost small"
                  aria-label={t('automation.removeAction', { n: i + 1 })}
                  onClick={() => edit({ actions: draft.actions.filter((_, j) => j !== i) })}
                >
                  ×
                </button>
                <FieldErrors id={described(path)} messages={at(path)} />
              </li>
            );
          })}
        </ol>
        <FieldErrors messages={details.filter((d) => d.path === 'body.actions').map((d) => d.message)} />
        <div>
          <button type="button" className="small" onClick={() => edit({ actions: [...draft.actions, newAction('reply', firsts)] })}>
            {t('automation.addAction')}
          </button>
        </div>
      </fieldset>
      <p className="muted small">{t('automation.placeholders', { name: '{customer.name}', lead: '{lead.id}' })}</p>
      <ErrorLine error={error} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          {t('app.save')}
        </button>
        <button type="button" onClick={() => onDone(false)}>
          {t('app.cancel')}
        </button>
      </div>
    </form>
  );
}

interface ValueProps<T> {
  n: number;
  invalid: boolean;
  describedBy?: string;
  onChange: (value: T) => void;
}

function ConditionValue({ condition: c, n, invalid, describedBy, onChange }: ValueProps<unknown> & { condition: Condition }) {
  const { integrations, statuses } = useCatalog();
  const label = t('automation.value', { n });
  const common = { 'aria-label': label, 'aria-invalid': invalid, 'aria-describedby': describedBy };
  if (c.field === 'customer.isNew' || c.field === 'time.workingHours')
    return (
      <select {...common} value={c.value ? 'yes' : 'no'} onChange={(e) => onChange(e.target.value === 'yes')}>
        <option value="yes">{t('app.yes')}</option>
        <option value="no">{t('app.no')}</option>
      </select>
    );
  if (c.field === 'message.text' || c.field === 'lead.tags')
    return <input {...common} value={String(c.value ?? '')} maxLength={4096} required onChange={(e) => onChange(e.target.value)} />;
  // The `in` fields: a set of choices.
  const chosen = new Set(Array.isArray(c.value) ? (c.value as unknown[]) : []);
  const choices: Array<{ value: string | number | null; label: string }> =
    c.field === 'integration.id'
      ? integrations.map((i) => ({ value: i.id, label: i.login ? `${i.login} (${channelName(i.type)})` : channelName(i.type) }))
      : c.field === 'integration.type'
        ? Object.keys(CHANNEL_TYPES).map((type) => ({ value: type, label: channelName(type) }))
        : [{ value: null, label: t('automation.inbox') }, ...statuses.map((s) => ({ value: s.id, label: s.name }))];
  return (
    <fieldset className="row wrap choice-set" aria-label={label} aria-invalid={invalid} aria-describedby={describedBy}>
      {choices.map((ch) => (
        <label className="check" key={String(ch.value)}>
          <input
            type="checkbox"
            checked={chosen.has(ch.value)}
            onChange={(e) => {
              const next = new Set(chosen);
              if (e.target.checked) next.add(ch.value);
              else next.delete(ch.value);
              onChange(choices.map((x) => x.value).filter((v) => next.has(v)));
            }}
          />
          {ch.label}
        </label>
      ))}
    </fieldset>
  );
}

function ActionValue({ action: a, n, invalid, describedBy, onChange }: ValueProps<Action> & { action: Action }) {
  const { employees, statuses } = useCatalog();
  const common = { 'aria-label': t('automation.actionValue', { n }), 'aria-invalid': invalid, 'aria-describedby': describedBy };
  switch (a.type) {
    case 'assign':
      return (
        <select {...common} value={a.userId} onChange={(e) => onChange({ ...a, userId: Number(e.target.value) })}>
          {employees
            .filter((e) => e.confirmed)
            .map((e) => (
              <option key={e.id} value={e.id}>
                {e.name || e.login}
              </option>
            ))}
        </select>
      );
    case 'distribute':
      return (
        <select {...common} value={a.mode} onChange={(e) => onChange({ ...a, mode: e.target.value as 'round_robin' | 'least_busy' })}>
          <option value="round_robin">{t('automation.mode.round_robin')}</option>
          <option value="least_busy">{t('automation.mode.least_busy')}</option>
        </select>
      );
    case 'setStatus':
      return (
        <select {...common} value={a.statusId} onChange={(e) => onChange({ ...a, statusId: Number(e.target.value) })}>
          {statuses.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name}
            </option>
          ))}
        </select>
      );
    case 'addTag':
    case 'removeTag':
      return <input {...common} value={a.tag} maxLength={100} required onChange={(e) => onChange({ ...a, tag: e.target.value })} />;
    default:
      return (
        <textarea
          {...common}
          value={a.text}
          rows={2}
          maxLength={4096}
          required
          onChange={(e) => onChange({ ...a, text: e.target.value })}
        />
      );
  }
}

/** An action type by its name in the app's language (a type the app does not know: as the server sent it). */
export function actionLabel(type: string): string {
  return ACTION_TYPES.includes(type as ActionType) ? t(`automation.action.${type as ActionType}`) : type;
}
