import { useState } from 'react';
import { api } from '../../api/client';
import type { ConnectedApp, OAuthApp } from '../../api/types';
import { formatDay, t } from '../../i18n';
import { confirmDelete, ErrorLine, ShownOnce, useAction, useResource } from './common';

/** The apps the signed-in employee allowed to act for it (every employee); revoking ends their tokens. */
export function ConnectedAppSettings() {
  const { data, error, reload } = useResource(() => api.get<ConnectedApp[]>('/oauth/grants'));
  const { run, error: actionError } = useAction();
  return (
    <div className="stack">
      <ErrorLine error={error ?? actionError} />
      {data?.length === 0 && <p className="muted">{t('connectedApps.none')}</p>}
      <ul className="plain stack">
        {data?.map((a) => (
          <li key={a.appId} className="row">
            <strong>{a.name}</strong>
            <span className="muted">{a.scopes.join(', ')}</span>
            <span className="muted">{t('connectedApps.since', { day: formatDay(a.grantedAt) })}</span>
            <button
              type="button"
              className="ghost small danger"
              onClick={() => confirmDelete(a.name) && void run(() => api.del(`/oauth/grants/${a.appId}`)).then(reload)}
            >
              {t('connectedApps.revoke')}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

/** OAuth 2 apps of the account (owner): register one, see its client id, delete it. */
export function OAuthAppSettings() {
  const { data, error, reload } = useResource(() => api.get<OAuthApp[]>('/oauth/apps'));
  const [form, setForm] = useState({ name: '', redirectUris: '', confidential: true });
  const [created, setCreated] = useState<OAuthApp | null>(null);
  const { run, error: actionError } = useAction();
  const create = () =>
    run(async () => {
      const redirectUris = form.redirectUris.split(/\s+/).filter(Boolean);
      setCreated(await api.post<OAuthApp>('/oauth/apps', { name: form.name.trim(), redirectUris, confidential: form.confidential }));
      setForm({ name: '', redirectUris: '', confidential: true });
    }).then(() => reload());
  return (
    <div className="stack">
      <p className="muted">{t('oauthApps.intro')}</p>
      <ErrorLine error={error ?? actionError} />
      {created?.clientSecret && <ShownOnce message={t('oauthApps.once')} secret={created.clientSecret} />}
      <ul className="plain stack">
        {data?.map((a) => (
          <li key={a.id} className="row">
            <strong>{a.name}</strong>
            <code>{a.clientId}</code>
            <span className="muted">{a.confidential ? t('oauthApps.confidential') : t('oauthApps.public')}</span>
            <button
              type="button"
              className="ghost small danger"
              onClick={() => confirmDelete(a.name) && void run(() => api.del(`/oauth/apps/${a.id}`)).then(reload)}
            >
              {t('oauthApps.delete')}
            </button>
          </li>
        ))}
      </ul>
      <form
        className="card-form stack"
        aria-label={t('oauthApps.create')}
        onSubmit={(e) => {
          e.preventDefault();
          void create();
        }}
      >
        <label>
          {t('oauthApps.name')}
          <input value={form.name} required maxLength={200} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </label>
        <label>
          {t('oauthApps.redirectUris')}
          <textarea value={form.redirectUris} required rows={2} onChange={(e) => setForm({ ...form, redirectUris: e.target.value })} />
        </label>
        <label className="row">
          <input type="checkbox" checked={form.confidential} onChange={(e) => setForm({ ...form, confidential: e.target.checked })} />
          {t('oauthApps.confidentialHint')}
        </label>
        <button type="submit" className="primary">
          {t('oauthApps.create')}
        </button>
      </form>
    </div>
  );
}
