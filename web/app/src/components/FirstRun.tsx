import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { Integration } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { linkProps } from '../router';
import '../sales.css';
import { errorText } from '../i18n/errors';

/**
 * Shown while the account has no channel: how to connect one, the site widget first (one click,
 * then its snippet to paste). Managers are told to ask the owner. The snippet stays until closed,
 * though the new channel reaches the catalogue at once; a channel connected elsewhere ends it
 * (`onDone`).
 */
export function FirstRun({ onDone }: { onDone: () => void }) {
  const { isOwner, reload, integrations } = useCatalog();
  const [widget, setWidget] = useState<Integration | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (integrations.length > 0 && !widget && !busy) onDone();
  }, [integrations.length, widget, busy, onDone]);

  const connect = async () => {
    setBusy(true);
    setError(null);
    try {
      setWidget(await api.post<Integration>('/integrations', { type: 'widget' }));
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const snippet = widget?.widget?.snippet ?? '';
  return (
    <section className="first-run" aria-labelledby="first-run-title">
      <h2 id="first-run-title">{t('firstRun.title')}</h2>
      {!isOwner ? (
        <p>{t('firstRun.ask')}</p>
      ) : widget?.widget ? (
        <>
          <p>{t('integrations.snippet')}</p>
          <pre>
            <code>{widget.widget.snippet}</code>
          </pre>
          <div className="row">
            <button type="button" className="small" onClick={() => void navigator.clipboard?.writeText(snippet)}>
              {t('app.copy')}
            </button>
            <button
              type="button"
              className="small primary"
              onClick={() => {
                onDone();
                void reload(['integrations']);
              }}
            >
              {t('app.close')}
            </button>
          </div>
        </>
      ) : (
        <>
          <p>{t('firstRun.intro')}</p>
          <button type="button" className="primary" onClick={() => void connect()} disabled={busy}>
            {t('firstRun.widget')}
          </button>
          <p className="muted small">
            <a {...linkProps('/settings/integrations')}>{t('firstRun.others')}</a>
          </p>
        </>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
