import { useEffect, useState } from 'react';
import { api, setTokens } from '../api/client';
import type { ConsentPreview, Me } from '../api/types';
import { t } from '../i18n';
import type { MessageKey } from '../i18n/en';
import { errorText } from '../i18n/errors';

/** The parameters of an authorization request that the server takes (others are not passed on). */
const PARAMS = ['response_type', 'client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method'];

const SCOPE_TEXT: Record<string, MessageKey> = {
  read: 'consent.scope.read',
  write: 'consent.scope.write',
  admin: 'consent.scope.admin',
};

/**
 * `/oauth/authorize`: a third-party app asks to act for the signed-in employee (docs/api/oauth.md).
 * The server checks the request first; Allow or Deny sends the browser back to the app.
 */
export function ConsentPage({ query }: { query: URLSearchParams }) {
  const params: Record<string, string> = {};
  for (const k of PARAMS) {
    const v = query.get(k);
    if (v !== null) params[k] = v;
  }
  const qs = new URLSearchParams(params).toString();
  const [preview, setPreview] = useState<ConsentPreview | null>(null);
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    api.get<ConsentPreview>(`/oauth/authorize?${qs}`).then(setPreview, (e: unknown) => setError(errorText(e)));
    api.get<Me>('/account/me').then(setMe, () => undefined);
  }, [qs]);

  const decide = async (allowed: boolean) => {
    setBusy(true);
    try {
      const { redirectTo } = await api.post<{ redirectTo: string }>('/oauth/authorize', { ...params, allowed });
      window.location.assign(redirectTo);
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  };

  return (
    <main className="auth">
      <div className="auth-card stack">
        {error ? (
          <>
            <h1>{t('consent.errorTitle')}</h1>
            <p className="error" role="alert">
              {error}
            </p>
          </>
        ) : !preview ? (
          <p>{t('app.loading')}</p>
        ) : (
          <>
            <h1>{t('consent.title', { app: preview.app.name })}</h1>
            <p className="muted">{t('consent.intro', { app: preview.app.name })}</p>
            <ul aria-label={t('consent.scopes')}>
              {preview.scopes.map((s) => (
                <li key={s}>{SCOPE_TEXT[s] ? t(SCOPE_TEXT[s]) : s}</li>
              ))}
            </ul>
            {me?.user && (
              <p className="muted">
                {t('consent.as', { name: me.user.name || me.user.login })}{' '}
                <button type="button" className="link" onClick={() => setTokens(null)}>
                  {t('consent.switch')}
                </button>
              </p>
            )}
            <p className="muted small">{t('consent.redirect', { uri: new URL(preview.redirectUri).origin })}</p>
            <div className="row">
              <button type="button" className="primary" disabled={busy} onClick={() => void decide(true)}>
                {t('consent.allow')}
              </button>
              <button type="button" disabled={busy} onClick={() => void decide(false)}>
                {t('consent.deny')}
              </button>
            </div>
          </>
        )}
      </div>
    </main>
  );
}
