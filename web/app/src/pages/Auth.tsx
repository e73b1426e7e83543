import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, request, setTokens } from '../api/client';
import type { TokenPair } from '../api/types';
import { forgetPick, getLocale, t } from '../i18n';
import { LanguageSwitch } from '../components/LanguageSwitch';
import { navigate } from '../router';
import { errorText } from '../i18n/errors';

function Card({ title, intro, children }: { title: string; intro?: string; children: ReactNode }) {
  return (
    <main className="auth">
      <div className="auth-card">
        <div className="auth-language">
          <LanguageSwitch userId={null} />
        </div>
        <h1>{title}</h1>
        {intro && <p className="muted">{intro}</p>}
        {children}
      </div>
    </main>
  );
}

function useSubmit(run: () => Promise<void>, failMessage?: (e: ApiError) => string | undefined) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await run();
    } catch (err) {
      const msg = err instanceof ApiError ? (failMessage?.(err) ?? errorText(err)) : errorText(err);
      setError(msg);
      setBusy(false);
    }
  };
  return { busy, error, submit };
}

async function signIn(path: string, body: unknown, next = '/inbox') {
  const { data } = await request<TokenPair>('POST', path, { body, auth: false });
  setTokens(data);
  navigate(next, true);
}

/** Sign-in, or the first-run setup when the installation has no account yet. */
export function AuthPage({ mode, next }: { mode: 'login' | 'setup'; next?: string }) {
  const [setup, setSetup] = useState<{ firstRun: boolean; signup: string } | null>(null);
  const [login, setLogin] = useState('');
  const [pass, setPass] = useState('');
  const [name, setName] = useState('');

  useEffect(() => {
    void request<{ firstRun: boolean; signup: string }>('GET', '/auth/setup', { auth: false })
      .then((r) => setSetup(r.data))
      .catch(() => setSetup({ firstRun: false, signup: 'closed' }));
  }, []);

  const creating = setup?.firstRun || (mode === 'setup' && setup?.signup === 'open');
  const { busy, error, submit } = useSubmit(
    async () => {
      if (!creating) return signIn('/auth/login', { login, pass }, next);
      // The account is born in the language on screen (its default statuses are named in it).
      await signIn('/auth/register', { login, pass, name, locale: getLocale() }, next);
      forgetPick();
    },
    (e) => (!creating && e.status === 401 ? t('auth.login.failed') : undefined),
  );
  if (!setup) return <Card title={t('app.name')}>{t('app.loading')}</Card>;

  return (
    <Card
      title={creating ? t('auth.setup.title') : t('auth.login.title')}
      intro={creating ? (setup.firstRun ? t('auth.setup.intro') : t('auth.setup.introOpen')) : undefined}
    >
      <form onSubmit={submit} className="stack" aria-label={creating ? t('auth.setup.title') : t('auth.login.title')}>
        {creating && (
          <label>
            {t('auth.setup.name')}
            <input name="name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} autoComplete="name" />
          </label>
        )}
        <label>
          {t('auth.login.email')}
          <input
            name="login"
            type="email"
            value={login}
            onChange={(e) => setLogin(e.target.value)}
            required
            maxLength={254}
            autoComplete="username"
            // biome-ignore lint/a11y/noAutofocus: the sign-in page exists for this form: focus in its first field is what a keyboard or screen-reader user expects
            autoFocus
          />
        </label>
        <label>
          {t('auth.login.password')}
          <input
            name="pass"
            type="password"
            value={pass}
            onChange={(e) => setPass(e.target.value)}
            required
            minLength={creating ? 8 : 1}
            maxLength={256}
            autoComplete={creating ? 'new-password' : 'current-password'}
          />
          {creating && <small className="muted">{t('auth.password.hint')}</small>}
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          {creating ? t('auth.setup.submit') : t('auth.login.submit')}
        </button>
        {!setup.firstRun && setup.signup === 'open' && (
          <button type="button" className="link" onClick={() => navigate(creating ? '/login' : '/setup')}>
            {creating ? t('auth.setup.toLogin') : t('auth.login.toSetup')}
          </button>
        )}
      </form>
    </Card>
  );
}

/** The page of the invitation e-mail's link: `/invite?token=...`. */
export function InvitePage({ token }: { token: string }) {
  const [name, setName] = useState('');
  const [pass, setPass] = useState('');
  const { busy, error, submit } = useSubmit(() => {
    setTokens(null);
    return signIn('/auth/invitation', { token, pass, name });
  });
  if (!token) return <Card title={t('auth.invite.title')}>{t('auth.invite.missing')}</Card>;
  return (
    <Card title={t('auth.invite.title')} intro={t('auth.invite.intro')}>
      <form onSubmit={submit} className="stack" aria-label={t('auth.invite.title')}>
        <label>
          {t('auth.setup.name')}
          <input
            name="name"
            value={name}
            onChange={(e) => setName(e.target.value)}
            required
            maxLength={200}
            autoComplete="name"
            // biome-ignore lint/a11y/noAutofocus: the invitation page exists for this form: focus in its first field is what a keyboard or screen-reader user expects
            autoFocus
          />
        </label>
        <label>
          {t('auth.login.password')}
          <input
            name="pass"
            type="password"
            value={pass}
            onChange={(e) => setPass(e.target.value)}
            required
            minLength={8}
            maxLength={256}
            autoComplete="new-password"
          />
          <small className="muted">{t('auth.password.hint')}</small>
        </label>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          {t('auth.invite.submit')}
        </button>
      </form>
    </Card>
  );
}
