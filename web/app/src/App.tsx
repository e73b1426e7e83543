import { lazy, type ReactNode, Suspense, useEffect, useState, useSyncExternalStore } from 'react';
import { getSession, onSessionChange, setTokens } from './api/client';
import { realtime } from './api/realtime';
import { registerPushDevice } from './api/push';
import { CatalogProvider, useCatalog } from './catalog';
import { getFormatVersion, onLocaleChange, t } from './i18n';
import { LanguageSwitch } from './components/LanguageSwitch';
import { AvailabilitySwitch } from './components/AvailabilitySwitch';
import { AuthPage, InvitePage } from './pages/Auth';
import { ConsentPage } from './pages/Consent';
import { InboxPage } from './pages/Inbox';
import { SearchPage } from './pages/Search';
import { MentionToasts } from './components/MentionToasts';
import { OverdueToasts } from './components/OverdueToasts';
import { ShortcutsHelp } from './components/ShortcutsHelp';
import { linkProps, navigate, useLocation } from './router';
import { channelName } from './channels/ChannelName';

// Code-split: the funnel board and the settings are not needed for the first screen.
const FunnelPage = lazy(() => import('./pages/Funnel'));
const SettingsPage = lazy(() => import('./pages/settings/Settings'));
const ReportsPage = lazy(() => import('./pages/Reports'));
const ChannelHelpView = lazy(() => import('./pages/ChannelHelp'));

export function App() {
  const session = useSyncExternalStore(onSessionChange, getSession);
  // A language switch re-renders the whole tree at once: every text is read through t() while rendering.
  useSyncExternalStore(onLocaleChange, getFormatVersion);
  const { path, query } = useLocation();
  if (path === '/invite') return <InvitePage token={query.get('token') ?? ''} />;
  // A third-party app's authorization request: sign in first if needed, then the consent screen.
  if (path === '/oauth/authorize')
    return session ? <ConsentPage query={query} /> : <AuthPage mode="login" next={location.pathname + location.search} />;
  if (!session) return <AuthPage mode={path === '/setup' ? 'setup' : 'login'} />;
  return (
    <CatalogProvider
      fallback={(error, retry) => (
        <div className="center-screen" role="status">
          {error ? (
            <>
              <p>{t('app.error', { message: error })}</p>
              <button type="button" onClick={retry}>
                {t('app.retry')}
              </button>
              <button type="button" className="link" onClick={() => setTokens(null)}>
                {t('nav.logout')}
              </button>
            </>
          ) : (
            t('app.loading')
          )}
        </div>
      )}
    >
      <Shell path={path} />
    </CatalogProvider>
  );
}

function useRealtimeState() {
  return useSyncExternalStore(
    (fn) => realtime.onState(fn),
    () => realtime.state,
  );
}

function Shell({ path }: { path: string }) {
  const catalog = useCatalog();
  const live = useRealtimeState();
  const [notifyPermission, setNotifyPermission] = useState(typeof Notification === 'undefined' ? 'denied' : Notification.permission);

  useEffect(() => {
    realtime.start();
    return () => realtime.stop();
  }, []);

  // Push while the app is closed: keep this browser registered as a device once notifications are allowed.
  useEffect(() => {
    if (notifyPermission === 'granted') void registerPushDevice().catch(() => undefined);
  }, [notifyPermission]);

  // A browser notification for a new customer message while the tab is hidden.
  useEffect(
    () =>
      realtime.subscribe((m) => {
        if (m.kind !== 'event' || m.event.type !== 'message.incoming' || !document.hidden) return;
        if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
        const msg = m.event.message;
        const n = new Notification(t('notify.newMessage', { name: msg?.sender.login || `#${m.event.leadId}` }), {
          body: msg?.sa?.type ? `${channelName(msg.sa.type)} · ${msg.message.text ?? ''}` : (msg?.message.text ?? ''),
          tag: `lead-${m.event.leadId}`,
        });
        n.onclick = () => {
          window.focus();
          navigate(`/leads/${m.event.leadId}`);
        };
      }),
    [],
  );

  useEffect(() => {
    if (path === '/' || path === '/login' || path === '/setup') navigate('/inbox', true);
  }, [path]);

  const section = path.split('/')[1] ?? '';
  const leadMatch = /^\/leads\/(\d+)$/.exec(path);
  let page: ReactNode;
  if (section === 'inbox' || leadMatch) page = <InboxPage leadId={leadMatch ? Number(leadMatch[1]) : null} />;
  else if (section === 'funnel') page = <FunnelPage />;
  else if (section === 'search') page = <SearchPage />;
  else if (section === 'reports') page = <ReportsPage />;
  else if (section === 'settings') page = <SettingsPage section={path.split('/')[2] ?? ''} />;
  else if (section === 'help') page = <ChannelHelpView page={path.split('/')[3] ?? ''} />;
  else page = null;

  const nav = (to: string, label: string, current: boolean) => (
    <a {...linkProps(to)} aria-current={current ? 'page' : undefined} className="nav-link">
      {label}
    </a>
  );

  return (
    <div className="shell">
      <a className="skip" href="#main">
        {t('app.skip')}
      </a>
      <header className="topbar">
        <span className="brand">{t('app.name')}</span>
        <nav aria-label={t('nav.main')} className="nav">
          {nav('/inbox', t('nav.inbox'), section === 'inbox' || !!leadMatch)}
          {nav('/funnel', t('nav.funnel'), section === 'funnel')}
          {nav('/search', t('nav.search'), section === 'search')}
          {nav('/reports', t('nav.reports'), section === 'reports')}
          {nav(catalog.isOwner ? '/settings/statuses' : '/settings/connected-apps', t('nav.settings'), section === 'settings')}
        </nav>
        <span className="spacer" />
        {live !== 'open' && (
          <span className="live-state" role="status" title={t('app.offline')}>
            ●<span className="sr-only">{t('app.offline')}</span>
          </span>
        )}
        {notifyPermission === 'default' && (
          <button
            type="button"
            className="ghost small"
            onClick={() => void Notification.requestPermission().then((p) => setNotifyPermission(p))}
          >
            {t('nav.notifications')}
          </button>
        )}
        <AvailabilitySwitch />
        <LanguageSwitch userId={catalog.userId} />
        <span className="whoami" title={catalog.me.user?.login}>
          {catalog.me.user?.name}
        </span>
        <button
          type="button"
          className="ghost small"
          onClick={() => {
            realtime.stop();
            setTokens(null);
            navigate('/login');
          }}
        >
          {t('nav.logout')}
        </button>
      </header>
      <main id="main" className="main" tabIndex={-1}>
        <Suspense fallback={<div className="center-screen">{t('app.loading')}</div>}>{page}</Suspense>
      </main>
      <MentionToasts />
      <OverdueToasts />
      <ShortcutsHelp />
    </div>
  );
}
