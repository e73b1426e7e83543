import { useState, type FormEvent } from 'react';
import { api } from '../api/client';
import type { Lead, SearchMessage } from '../api/types';
import { useCatalog } from '../catalog';
import { formatTime, t } from '../i18n';
import { linkProps, navigate } from '../router';
import { Avatar } from '../components/Avatar';
import { ChannelName } from '../channels/ChannelName';
import { errorText } from '../i18n/errors';

interface MessageHits {
  integrationId: number;
  cursors: Array<{ type: string; cursor: number | string }>;
  messages: SearchMessage[];
}

/** Search customers (their leads) and message texts; a result opens the conversation. */
export function SearchPage() {
  const { integrations } = useCatalog();
  const [q, setQ] = useState(() => new URLSearchParams(location.search).get('q') ?? '');
  const [leads, setLeads] = useState<Lead[] | null>(null);
  const [cursor, setCursor] = useState(-1);
  const [hits, setHits] = useState<MessageHits[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [asked, setAsked] = useState('');

  const search = async (e?: FormEvent) => {
    e?.preventDefault();
    const term = q.trim();
    if (!term) return;
    setBusy(true);
    setError(null);
    navigate(`/search?q=${encodeURIComponent(term)}`, true);
    try {
      const [customers, ...messages] = await Promise.all([
        api.post<{ cursor: number; leads: Lead[] }>('/search/customers', { q: term }),
        ...integrations.map((i) =>
          api
            .post<{ cursors: MessageHits['cursors']; messages: SearchMessage[] }>(`/search/${i.id}`, { q: term })
            .then((r) => ({ integrationId: i.id, ...r }))
            .catch(() => ({ integrationId: i.id, cursors: [], messages: [] })),
        ),
      ]);
      setLeads(customers.leads);
      setCursor(customers.cursor);
      setHits(messages);
      setAsked(term);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  const moreCustomers = async () => {
    const r = await api.post<{ cursor: number; leads: Lead[] }>('/search/customers', { q: asked, cursor });
    setLeads((l) => [...(l ?? []), ...r.leads]);
    setCursor(r.cursor);
  };
  const moreMessages = async (h: MessageHits) => {
    const r = await api.post<{ cursors: MessageHits['cursors']; messages: SearchMessage[] }>(`/search/${h.integrationId}`, {
      q: asked,
      cursors: h.cursors.filter((c) => String(c.cursor) !== '-1'),
    });
    setHits((all) =>
      all.map((x) => (x.integrationId === h.integrationId ? { ...x, cursors: r.cursors, messages: [...x.messages, ...r.messages] } : x)),
    );
  };

  const allMessages = hits.flatMap((h) => h.messages.map((m) => ({ m, h })));
  const typeOf = (integrationId: number) => integrations.find((i) => i.id === integrationId)?.type ?? '';
  return (
    <div className="page search-page">
      <h1>{t('search.title')}</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: the <search> element is newer than the browsers the app supports; role=search on the form says the same */}
      <form onSubmit={search} className="row search-form" role="search">
        <input
          type="search"
          value={q}
          onChange={(e) => setQ(e.target.value)}
          placeholder={t('search.placeholder')}
          aria-label={t('search.placeholder')}
          maxLength={200}
          // biome-ignore lint/a11y/noAutofocus: the page exists for this one field: focus there is what a keyboard or screen-reader user expects on opening it
          autoFocus
        />
        <button type="submit" className="primary" disabled={busy}>
          {t('search.submit')}
        </button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {leads && (
        <div className="search-results">
          <section aria-label={t('search.customers')}>
            <h2>{t('search.customers')}</h2>
            {leads.length === 0 && <p className="muted">{t('search.none')}</p>}
            <ul className="plain result-list">
              {leads.map((l) => (
                <li key={l.id}>
                  <a {...linkProps(`/leads/${l.id}`)} className="result">
                    <Avatar name={l.customer.name || l.customer.login} url={l.customer.avatar} />
                    <span>
                      <strong>{l.customer.name || l.customer.login}</strong>
                      <span className="muted small"> {[l.customer.phone, l.customer.email].filter(Boolean).join(' · ')}</span>
                      <br />
                      <span className="muted small">{l.message?.data.text ?? ''}</span>
                    </span>
                  </a>
                </li>
              ))}
            </ul>
            {cursor !== -1 && (
              <button type="button" className="small" onClick={() => void moreCustomers()}>
                {t('search.more')}
              </button>
            )}
          </section>
          <section aria-label={t('search.messages')}>
            <h2>{t('search.messages')}</h2>
            {allMessages.length === 0 && <p className="muted">{t('search.none')}</p>}
            <ul className="plain result-list">
              {allMessages.map(({ m, h }) => (
                <li key={`${h.integrationId}-${m.type}-${m.externalId}`}>
                  <a {...linkProps(`/leads/${m.leadId[0] ?? ''}`)} className="result">
                    <span>
                      <span className="muted small">
                        {formatTime(m.message.timestamp)} · <ChannelName type={typeOf(h.integrationId)} /> · #{m.leadId[0]}
                      </span>
                      <br />
                      {m.message.text}
                    </span>
                  </a>
                </li>
              ))}
            </ul>
            {hits
              .filter((h) => h.cursors.some((c) => String(c.cursor) !== '-1'))
              .map((h) => (
                <button type="button" key={h.integrationId} className="small" onClick={() => void moreMessages(h)}>
                  {t('search.more')} (#{h.integrationId})
                </button>
              ))}
          </section>
        </div>
      )}
    </div>
  );
}
