import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { WhatsAppTemplate } from '../api/types';
import { t } from '../i18n';
import { bodyParameterCount, templatePreview, templateSend } from '../state/whatsapp';
import { errorText } from '../i18n/errors';

/**
 * The composer of a WhatsApp conversation whose 24-hour window has closed: only approved templates
 * can go, so the agent picks one and fills its body parameters.
 */
export function TemplateComposer({
  saId,
  onSend,
  disabled,
}: {
  saId: number;
  onSend: (template: ReturnType<typeof templateSend>, preview: string) => void;
  disabled: boolean;
}) {
  const [templates, setTemplates] = useState<WhatsAppTemplate[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [picked, setPicked] = useState(0);
  const [values, setValues] = useState<string[]>([]);

  useEffect(() => {
    setTemplates(null);
    api.get<WhatsAppTemplate[]>(`/integrations/${saId}/templates`).then(setTemplates, (e: unknown) => setError(errorText(e)));
  }, [saId]);

  const template = templates?.[picked];
  const count = template ? bodyParameterCount(template) : 0;
  return (
    <form
      className="composer template-composer stack"
      aria-label={t('wa.templates')}
      onSubmit={(e) => {
        e.preventDefault();
        if (!template || disabled) return;
        onSend(templateSend(template, values), templatePreview(template, values));
        setValues([]);
      }}
    >
      <p className="muted small">{t('wa.windowClosedHint')}</p>
      {error && (
        <p className="error" role="alert">
          {t('app.error', { message: error })}
        </p>
      )}
      {templates && templates.length === 0 && <p className="muted small">{t('wa.noTemplates')}</p>}
      {template && (
        <>
          <label>
            {t('wa.template')}{' '}
            <select
              value={picked}
              onChange={(e) => {
                setPicked(Number(e.target.value));
                setValues([]);
              }}
            >
              {(templates ?? []).map((x, i) => (
                <option key={`${x.name}:${x.language}`} value={i}>
                  {x.name} ({x.language})
                </option>
              ))}
            </select>
          </label>
          {Array.from({ length: count }, (_, i) => (
            <input
              // biome-ignore lint/suspicious/noArrayIndexKey: the position is the parameter ({{1}}, {{2}}, ...)
              key={i}
              required
              maxLength={1024}
              aria-label={t('wa.parameter', { n: i + 1 })}
              placeholder={t('wa.parameter', { n: i + 1 })}
              value={values[i] ?? ''}
              onChange={(e) => setValues((v) => Object.assign([...v], { [i]: e.target.value }))}
            />
          ))}
          <p className="template-preview small">{templatePreview(template, values)}</p>
          <button type="submit" className="primary" disabled={disabled}>
            {t('wa.sendTemplate')}
          </button>
        </>
      )}
    </form>
  );
}
