import { type FormEvent, useId, useState } from 'react';
import { ApiError, api } from '../../api/client';
import type { WidgetInfo } from '../../api/types';
import { catalogues, LOCALES, type MessageKey, t } from '../../i18n';
import { errorText } from '../../i18n/errors';
import { ErrorLine } from './common';

type Settings = WidgetInfo['settings'];
type Mode = Settings['preChat']['name'];
type Field =
  | 'title'
  | 'greeting'
  | 'offlineMessage'
  | 'color'
  | 'allowedOrigins'
  | 'preChat'
  | 'offline'
  | 'identityVerification'
  | 'language';

const FIELD_LABEL: Record<Field, MessageKey> = {
  title: 'widgetSettings.title',
  greeting: 'widgetSettings.greeting',
  offlineMessage: 'widgetSettings.offlineMessage',
  color: 'widgetSettings.color',
  allowedOrigins: 'widgetSettings.allowedOrigins',
  preChat: 'widgetSettings.preChat',
  offline: 'widgetSettings.offline',
  identityVerification: 'widgetSettings.identityVerification',
  language: 'widgetSettings.language',
};
const PRE_CHAT: Array<{ field: keyof Settings['preChat']; label: MessageKey }> = [
  { field: 'name', label: 'widgetSettings.preChat.name' },
  { field: 'email', label: 'widgetSettings.preChat.email' },
  { field: 'phone', label: 'widgetSettings.preChat.phone' },
];
const MODES: Array<{ mode: Mode; label: MessageKey }> = [
  { mode: 'optional', label: 'widgetSettings.mode.optional' },
  { mode: 'required', label: 'widgetSettings.mode.required' },
  { mode: 'off', label: 'widgetSettings.mode.off' },
];

/** The field a refusal's detail names: `body.allowedOrigins.2` or `/allowedOrigins/2` -> allowedOrigins. */
function refusedField(path: string): Field | null {
  const name = path.replace(/^\/?(body)?[./]?/, '').split(/[./]/)[0];
  return name in FIELD_LABEL ? (name as Field) : null;
}

/**
 * The site widget's settings as `PUT /v1.3/integrations/<id>/widget` takes them
 * (docs/api/integrations.md "Site widget settings"): the owner's texts, colour, the sites allowed to
 * embed it, the pre-chat form, offline mode, identity verification and the language of its own texts.
 */
export function WidgetSettingsForm({ info, onSaved }: { info: WidgetInfo; onSaved: (info: WidgetInfo) => void }) {
  const [s, setS] = useState<Settings>(info.settings);
  const [origins, setOrigins] = useState(info.settings.allowedOrigins.join('\n'));
  const [error, setError] = useState<string | null>(null);
  const [refused, setRefused] = useState<Field[]>([]);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState(false);
  const hintId = useId();
  const set = <K extends keyof Settings>(key: K, value: Settings[K]) => {
    setSaved(false);
    setS((prev) => ({ ...prev, [key]: value }));
  };
  const invalid = (f: Field) => (refused.includes(f) ? true : undefined);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setRefused([]);
    setSaved(false);
    try {
      const allowedOrigins = origins
        .split(/[\s,]+/)
        .map((o) => o.trim())
        .filter(Boolean);
      const next = await api.put<WidgetInfo>(`/integrations/${info.integrationId}/widget`, { ...s, allowedOrigins });
      setS(next.settings);
      setOrigins(next.settings.allowedOrigins.join('\n'));
      setSaved(true);
      onSaved(next);
    } catch (err) {
      const fields = err instanceof ApiError ? [...new Set(err.details.map((d) => refusedField(d.path)).filter((f) => f !== null))] : [];
      setRefused(fields);
      setError(fields.length ? t('widgetSettings.refused', { fields: fields.map((f) => t(FIELD_LABEL[f])).join(', ') }) : errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="stack card-form" onSubmit={(e) => void submit(e)} aria-label={t('widgetSettings.heading')} data-widget-settings>
      <h3>{t('widgetSettings.heading')}</h3>
      <label>
        {t('widgetSettings.language')}
        <select
          value={s.language}
          onChange={(e) => set('language', e.target.value as Settings['language'])}
          aria-invalid={invalid('language')}
          aria-describedby={`${hintId}-language`}
        >
          <option value="auto">{t('widgetSettings.language.auto')}</option>
          {LOCALES.map((l) => (
            <option key={l} value={l} lang={l}>
              {catalogues[l]['language.name']}
            </option>
          ))}
        </select>
      </label>
      <small className="muted" id={`${hintId}-language`}>
        {t('widgetSettings.languageHint')}
      </small>
      <label>
        {t('widgetSettings.title')}
        <input value={s.title} onChange={(e) => set('title', e.target.value)} required maxLength={80} aria-invalid={invalid('title')} />
      </label>
      <label>
        {t('widgetSettings.greeting')}
        <textarea
          value={s.greeting}
          onChange={(e) => set('greeting', e.target.value)}
          maxLength={500}
          rows={2}
          aria-invalid={invalid('greeting')}
        />
      </label>
      <label>
        {t('widgetSettings.color')}
        <input type="color" value={s.color} onChange={(e) => set('color', e.target.value)} aria-invalid={invalid('color')} />
      </label>
      <fieldset className="stack">
        <legend>{t('widgetSettings.preChat')}</legend>
        {PRE_CHAT.map(({ field, label }) => (
          <label key={field}>
            {t(label)}
            <select
              value={s.preChat[field]}
              onChange={(e) => set('preChat', { ...s.preChat, [field]: e.target.value as Mode })}
              aria-invalid={invalid('preChat')}
            >
              {MODES.map((m) => (
                <option key={m.mode} value={m.mode}>
                  {t(m.label)}
                </option>
              ))}
            </select>
          </label>
        ))}
      </fieldset>
      <label className="row">
        <input type="checkbox" checked={s.offline} onChange={(e) => set('offline', e.target.checked)} />
        {t('widgetSettings.offline')}
      </label>
      <label>
        {t('widgetSettings.offlineMessage')}
        <textarea
          value={s.offlineMessage}
          onChange={(e) => set('offlineMessage', e.target.value)}
          maxLength={500}
          rows={2}
          aria-invalid={invalid('offlineMessage')}
        />
      </label>
      <label>
        {t('widgetSettings.allowedOrigins')}
        <textarea
          name="allowedOrigins"
          value={origins}
          onChange={(e) => {
            setSaved(false);
            setOrigins(e.target.value);
          }}
          rows={2}
          placeholder="https://shop.example"
          aria-invalid={invalid('allowedOrigins')}
          aria-describedby={`${hintId}-origins`}
        />
      </label>
      <small className="muted" id={`${hintId}-origins`}>
        {t('widgetSettings.allowedOriginsHint')}
      </small>
      <label className="row">
        <input type="checkbox" checked={s.identityVerification} onChange={(e) => set('identityVerification', e.target.checked)} />
        {t('widgetSettings.identityVerification')}
      </label>
      <ErrorLine error={error} />
      <div className="row">
        <button type="submit" className="primary" disabled={busy}>
          {t('app.save')}
        </button>
        {saved && (
          <span className="muted" role="status">
            {t('app.saved')}
          </span>
        )}
      </div>
    </form>
  );
}
