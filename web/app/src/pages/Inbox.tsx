import { useCallback, useEffect, useRef, useState } from 'react';
import { api, query, request } from '../api/client';
import { realtime } from '../api/realtime';
import type { Lead, Statistics } from '../api/types';
import { useCatalog } from '../catalog';
import { Avatar } from '../components/Avatar';
import { VirtualList } from '../components/VirtualList';
import { formatTime, t } from '../i18n';
import { navigate } from '../router';
import {
  activeFilterCount,
  appendPage,
  applyMessage,
  emptyList,
  filterParams,
  LISTS,
  markRead,
  noFilters,
  removeLead,
  upsertLead,
  type Filters,
  type ListName,
  type ListState,
} from '../state/leads';
import { Conversation } from './Conversation';
import { FilterBar } from './FilterBar';
import { BulkBar } from '../components/BulkBar';
import { FirstRun } from '../components/FirstRun';
import { LeadColumns } from '../components/LeadColumns';
import { useShortcutHandlers } from '../components/ShortcutsHelp';
import { keepShown, noSelection, selectAll, selectRange, toggle, type Selection } from '../state/selection';
import { errorText } from '../i18n/errors';

const PAGE = 50;
const ROW = 76;

function preview(lead: Lead): string {
  const m = lead.message;
  if (!m) return t('lists.noMessages');
  const text = m.data.text || (m.data.attachments.length ? t('lists.attachment') : '');
  return (m.incoming ? '' : t('lists.you')) + text;
}

function LeadRow({ lead, picking }: { lead: Lead; picking?: boolean }) {
  const { statuses } = useCatalog();
  const status = statuses.find((s) => s.id === lead.statusId);
  const unread = lead.message?.unread ?? 0;
  return (
    <div className={`lead-row${unread ? ' unread' : ''}`} data-lead-id={lead.id}>
      {picking && (
        <span className="pick-mark" aria-hidden="true">
          ✓
        </span>
      )}
      <Avatar name={lead.customer.name || lead.customer.login} url={lead.customer.avatar} />
      <div className="lead-row-body">
        <div className="lead-row-top">
          <span className="lead-name">{lead.customer.name || lead.customer.login || `#${lead.id}`}</span>
          <time className="muted small">{formatTime(Date.parse(lead.message?.timestamp ?? lead.createdAt))}</time>
        </div>
        <div className="lead-row-bottom">
          <span className="lead-preview">{preview(lead)}</span>
          {unread > 0 && (
            <span className="badge" role="img" aria-label={t('lists.unread', { count: unread })}>
              {unread}
            </span>
          )}
        </div>
        <LeadColumns lead={lead} status={status} />
      </div>
    </div>
  );
}

/** The inbox: lead lists with counts and filters on the left, the open conversation beside it. */
export function InboxPage({ leadId }: { leadId: number | null }) {
  const { statuses } = useCatalog();
  const [list, setList] = useState<ListName>(() => {
    const q = new URLSearchParams(location.search).get('list');
    return (LISTS as string[]).includes(q ?? '') ? (q as ListName) : 'inbox';
  });
  const [filters, setFilters] = useState<Filters>(noFilters);
  const [state, setState] = useState<ListState>(emptyList);
  const [counts, setCounts] = useState<Statistics['lists'] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [showFilters, setShowFilters] = useState(false);
  const [picking, setPicking] = useState(false);
  const [selection, setSelection] = useState<Selection>(noSelection);
  const { integrations } = useCatalog();
  // The first-run panel: shown once the account has no channel, until it ends itself (FirstRun).
  const [welcoming, setWelcoming] = useState(() => integrations.length === 0);
  const endWelcome = useCallback(() => setWelcoming(false), []);
  useEffect(() => {
    if (integrations.length === 0) setWelcoming(true);
  }, [integrations.length]);
  const loading = useRef(false);
  const generation = useRef(0);
  const ctx = useRef({ list, filters, leadId, state });
  ctx.current = { list, filters, leadId, state };

  const loadCounts = useCallback(async () => {
    try {
      const stats = await api.get<Statistics>(`/leads/statistics${query(filterParams('all', ctx.current.filters))}`);
      setCounts(stats.lists);
    } catch {
      /* counts are a convenience */
    }
  }, []);

  const loadPage = useCallback(async (reset: boolean) => {
    if (loading.current && !reset) return;
    const gen = reset ? ++generation.current : generation.current;
    loading.current = true;
    const { list, filters, state } = ctx.current;
    const offset = reset ? 0 : state.items.length;
    try {
      const res = await request<Lead[]>('GET', `/leads/${list}${query({ ...filterParams(list, filters), offset, limit: PAGE })}`);
      if (gen !== generation.current) return;
      setError(null);
      setState((s) => appendPage(reset ? emptyList : s, res.data, res.total, PAGE));
    } catch (e) {
      if (gen === generation.current) setError(errorText(e));
    } finally {
      if (gen === generation.current) loading.current = false;
    }
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: a new list or new filters start the list again (loadPage reads them through ctx)
  useEffect(() => {
    setState(emptyList);
    void loadPage(true);
    void loadCounts();
  }, [list, filters, loadPage, loadCounts]);

  // Keep the open lead read (again when more leads arrive: the open one may be among them).
  // biome-ignore lint/correctness/useExhaustiveDependencies: state.items.length is the trigger; the lead is read through ctx
  useEffect(() => {
    if (leadId === null) return;
    const lead = ctx.current.state.items.find((l) => l.id === leadId);
    if (lead?.read && !lead.message?.unread) return;
    setState((s) => markRead(s, leadId));
    void api.put(`/leads/${leadId}/read`).then(loadCounts, () => undefined);
  }, [leadId, state.items.length, loadCounts]);

  // Live updates: a message moves its lead to the top; a changed lead is re-read through the list's filters.
  useEffect(() => {
    let countsTimer: ReturnType<typeof setTimeout> | undefined;
    const refreshCounts = () => {
      clearTimeout(countsTimer);
      countsTimer = setTimeout(() => void loadCounts(), 250);
    };
    const refetch = async (id: number) => {
      const { list, filters } = ctx.current;
      const gen = generation.current;
      try {
        const res = await api.get<Lead[]>(`/leads/${list}${query({ ...filterParams(list, filters), id: [id], limit: 1 })}`);
        if (gen !== generation.current) return;
        setState((s) => (res[0] ? upsertLead(s, res[0]) : removeLead(s, id)));
      } catch {
        /* the next event or reload catches up */
      }
    };
    const off = realtime.subscribe((m) => {
      if (m.kind === 'reset') {
        void loadPage(true);
        refreshCounts();
        return;
      }
      if (m.kind !== 'event') return;
      const e = m.event;
      // Delivery statuses change a message's ticks only (the open conversation shows them).
      if (!e.leadId || e.type === 'message.status') return;
      if ((e.type === 'message.incoming' || e.type === 'message.outgoing') && e.message) {
        const held = ctx.current.state.items.some((l) => l.id === e.leadId);
        if (held) {
          const { leadId: eventLead, message } = e;
          setState((s) => applyMessage(s, eventLead, message, ctx.current.leadId));
          if (e.message.incoming && ctx.current.leadId === e.leadId && !document.hidden)
            void api.put(`/leads/${e.leadId}/read`).catch(() => undefined);
        } else void refetch(e.leadId);
      } else if (e.type.startsWith('lead.') && e.type !== 'lead.note.created') void refetch(e.leadId);
      refreshCounts();
    });
    return () => {
      off();
      clearTimeout(countsTimer);
    };
  }, [loadPage, loadCounts]);

  const onEnd = useCallback(() => {
    if (!ctx.current.state.done) void loadPage(false);
  }, [loadPage]);

  const selectList = (l: ListName) => {
    setList(l);
    if (leadId === null) navigate(`/inbox${l === 'inbox' ? '' : `?list=${l}`}`, true);
  };

  const order = state.items.map((l) => l.id);
  // biome-ignore lint/correctness/useExhaustiveDependencies: state.items is the trigger (the selection keeps only shown leads); they are read through ctx
  useEffect(
    () =>
      setSelection((sel) =>
        keepShown(
          sel,
          ctx.current.state.items.map((l) => l.id),
        ),
      ),
    [state.items],
  );
  const step = (by: number) => {
    const { state, leadId } = ctx.current;
    if (!state.items.length) return;
    const at = state.items.findIndex((l) => l.id === leadId);
    const next = state.items[at === -1 ? 0 : Math.max(0, Math.min(state.items.length - 1, at + by))];
    if (next) navigate(`/leads/${next.id}`);
  };
  useShortcutHandlers({
    next: () => step(1),
    prev: () => step(-1),
    open: () => {
      const focused = document.querySelector<HTMLElement>('.inbox-list .vrow.cursor [data-lead-id]');
      const id = Number(focused?.dataset.leadId ?? ctx.current.state.items[0]?.id);
      if (id) navigate(`/leads/${id}`);
    },
  });

  const nFilters = activeFilterCount(filters);
  const open = state.items.find((l) => l.id === leadId) ?? null;
  const emptyText = nFilters ? t('empty.filtered') : t(`empty.${list}`);
  return (
    <div className={`inbox${leadId !== null ? ' has-open' : ''}`}>
      <section className="inbox-list" aria-label={t('lists.label')}>
        <div className="tabs" role="tablist" aria-label={t('lists.label')}>
          {LISTS.map((l) => (
            <button type="button" key={l} role="tab" aria-selected={list === l} className="tab" onClick={() => selectList(l)} data-list={l}>
              {t(`lists.${l}`)}
              {counts && <span className="count">{counts[l]}</span>}
            </button>
          ))}
        </div>
        <div className="list-tools">
          <button type="button" className="ghost small" aria-expanded={showFilters} onClick={() => setShowFilters((v) => !v)}>
            {nFilters ? t('filters.count', { count: nFilters }) : t('filters.title')}
          </button>
          <button
            type="button"
            className="ghost small"
            aria-pressed={picking}
            onClick={() => {
              setPicking((v) => !v);
              setSelection(noSelection);
            }}
          >
            {picking ? t('bulk.done') : t('bulk.select')}
          </button>
        </div>
        {picking && (
          <BulkBar
            ids={[...selection.ids]}
            onSelectPage={() => setSelection((sel) => selectAll(sel, order))}
            onClear={() => setSelection(noSelection)}
            onDone={() => {
              void loadPage(true);
              void loadCounts();
            }}
          />
        )}
        {welcoming && <FirstRun onDone={endWelcome} />}
        {showFilters && <FilterBar list={list} value={filters} onChange={setFilters} statuses={statuses} />}
        {error && (
          <p className="error" role="alert">
            {t('app.error', { message: error })}{' '}
            <button type="button" onClick={() => void loadPage(true)}>
              {t('app.retry')}
            </button>
          </p>
        )}
        <VirtualList
          items={state.items}
          rowHeight={ROW}
          keyOf={(l) => l.id}
          idPrefix="lead"
          label={t(`lists.${list}`)}
          activeKey={leadId}
          onEndReached={onEnd}
          onOpen={(l) => navigate(`/leads/${l.id}`)}
          renderRow={(l) => <LeadRow lead={l} picking={picking} />}
          picking={
            picking
              ? {
                  isPicked: (l) => selection.ids.has(l.id),
                  onPick: (l, range) => setSelection((sel) => (range ? selectRange(sel, order, l.id) : toggle(sel, l.id))),
                }
              : undefined
          }
          empty={<p className="muted pad">{state.done ? emptyText : t('app.loading')}</p>}
          footer={!state.done && state.items.length > 0 ? <p className="muted pad small">{t('lists.loadingMore')}</p> : null}
        />
      </section>
      {leadId !== null ? (
        <Conversation
          key={leadId}
          leadId={leadId}
          listLead={open}
          onBack={() => navigate(`/inbox${list === 'inbox' ? '' : `?list=${list}`}`)}
        />
      ) : (
        <section className="conversation empty-state">
          <p className="muted">{t('conv.empty')}</p>
        </section>
      )}
    </div>
  );
}
