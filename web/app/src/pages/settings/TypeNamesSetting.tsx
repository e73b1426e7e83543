import { api } from '../../api/client';
import type { AccountSettings } from '../../api/types';
import { t } from '../../i18n';
import { ErrorLine, useAction, useResource } from './common';

/** The account's `typeNames` setting (docs/api/integrations.md): the owner's switch beside the API keys. */
export function TypeNamesSetting() {
  const { data, error, reload } = useResource(() => api.get<AccountSettings>('/account/me/settings'));
  const { run, busy, error: actionError } = useAction();
  const hosted = data?.typeNames === 'hosted';
  return (
    <div className="stack">
      <ErrorLine error={error ?? actionError} />
      <label className="row">
        <input
          type="checkbox"
          checked={hosted}
          disabled={!data || busy}
          onChange={(e) => void run(() => api.put('/account/me/settings', { typeNames: e.target.checked ? 'hosted' : 'api' })).then(reload)}
        />
        {t('apiSettings.hostedTypeNames')}
      </label>
      <p className="muted small">{t('apiSettings.hostedTypeNamesHint')}</p>
    </div>
  );
}
