import { useSyncExternalStore } from 'react';
import { api } from '../api/client';
import { catalogues, getLocale, isLocale, LOCALES, onLocaleChange, setLocale, t } from '../i18n';

/**
 * The app's language, switched at once (no reload) and kept on the server as the employee's
 * `locale` (docs/api/resources.md), so that it follows the employee to other browsers and e-mails.
 * Each language is named in itself.
 */
export function LanguageSwitch({ userId }: { userId: number | null }) {
  const locale = useSyncExternalStore(onLocaleChange, getLocale);
  return (
    <select
      className="language-switch small"
      aria-label={t('language.label')}
      title={t('language.label')}
      value={locale}
      onChange={(e) => {
        const next = e.target.value;
        if (!isLocale(next)) return;
        setLocale(next);
        if (userId !== null) void api.put(`/managers/${userId}`, { locale: next }).catch(() => undefined);
      }}
    >
      {LOCALES.map((l) => (
        <option key={l} value={l} lang={l}>
          {catalogues[l]['language.name']}
        </option>
      ))}
    </select>
  );
}
