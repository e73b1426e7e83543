import { useState, useSyncExternalStore } from 'react';
import { api } from '../api/client';
import { catalogues, forgetPick, getLocale, isLocale, LOCALES, onLocaleChange, rememberPick, setLocale, t } from '../i18n';
import { errorText } from '../i18n/errors';
import '../sales.css';
import { ErrorToast } from './ErrorToast';

/**
 * The app's language, switched at once (no reload) and kept on the server as the employee's
 * `locale` (docs/api/resources.md), so that it follows the employee to other browsers and e-mails.
 * Without an employee (sign-in, sign-up, invitation screens) the pick is kept in this browser and
 * stored on the employee at sign-in. Each language is named in itself.
 */
export function LanguageSwitch({ userId }: { userId: number | null }) {
  const locale = useSyncExternalStore(onLocaleChange, getLocale);
  const [failure, setFailure] = useState<string | null>(null);
  const choose = (next: string) => {
    if (!isLocale(next) || next === getLocale()) return;
    const previous = getLocale();
    setLocale(next);
    setFailure(null);
    if (userId === null) {
      rememberPick(next);
      return;
    }
    api.put(`/managers/${userId}`, { locale: next }).then(
      () => forgetPick(),
      (err: unknown) => {
        // Not kept on the server: the app goes back to the language that is, and says why.
        if (getLocale() === next) setLocale(previous);
        setFailure(errorText(err));
      },
    );
  };
  return (
    <>
      <select
        className="language-switch small"
        aria-label={t('language.label')}
        title={t('language.label')}
        value={locale}
        onChange={(e) => choose(e.target.value)}
      >
        {LOCALES.map((l) => (
          <option key={l} value={l} lang={l}>
            {catalogues[l]['language.name']}
          </option>
        ))}
      </select>
      {failure && (
        <ErrorToast
          text={t('language.saveFailed', { message: failure })}
          onDismiss={() => setFailure(null)}
          data={{ 'data-language-error': '' }}
        />
      )}
    </>
  );
}
