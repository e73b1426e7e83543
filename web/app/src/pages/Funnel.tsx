import { useCallback, useEffect, useRef, useState, type PointerEvent as ReactPointerEvent } from 'react';
import { api } from '../api/client';
import { realtime } from '../api/realtime';
import type { FunnelColumn, Lead, Statistics } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { navigate } from '../router';
import { moveLead } from '../state/funnel';
import {
  boardRequests,
  formatTotal,
  INBOX_COLUMN,
  moveTotals,
  statusOfColumn,
  totalsOf,
  withInbox,
  type BoardTotals,
} from '../state/funnel-inbox';
import '../sales.css';
import { Avatar } from '../components/Avatar';
import { errorText } from '../i18n/errors';

interface Drag {
  lead: Lead;
  fromStatus: number;
  startX: number;
  startY: number;
  x: number;
  y: number;
  moving: boolean;
  over: number | null;
}

function statusUnder(x: number, y: number): number | null {
  const el = document.elementFromPoint(x, y)?.closest<HTMLElement>('[data-status-id]');
  return el ? Number(el.dataset.statusId) : null;
}

/** The board's requests: the same filters for its columns' leads and their totals. */
const REQUESTS = boardRequests();

/**
 * The funnel board: statuses as columns; drag a card (or pick "Move to") to change its status.
 * Each column loads a page of its leads; its count and amount total are the server's, over every
 * lead it stands for (GET /v1.3/leads/statistics?amounts=true), refreshed after each move and live.
 */
export default function FunnelPage() {
  const { statuses } = useCatalog();
  const [columns, setColumns] = useState<FunnelColumn[] | null>(null);
  const [totals, setTotals] = useState<BoardTotals>(new Map());
  // Answers may arrive out of order (a move's refresh of the totals, a live reload of everything):
  // columns and totals each show only their latest request's answer.
  const generation = useRef({ columns: 0, totals: 0 });
  const [error, setError] = useState<string | null>(null);
  const [drag, setDrag] = useState<Drag | null>(null);
  const dragRef = useRef<Drag | null>(null);
  dragRef.current = drag;

  const load = useCallback(async () => {
    const gen = { columns: ++generation.current.columns, totals: ++generation.current.totals };
    try {
      // The Inbox column: new leads, dragged from here into the pipeline.
      const [funnel, inbox, stats] = await Promise.all([
        api.get<FunnelColumn[]>(REQUESTS.funnel),
        api.get<Lead[]>(REQUESTS.inbox),
        api.get<Statistics>(REQUESTS.totals),
      ]);
      if (gen.columns === generation.current.columns) setColumns(withInbox(funnel, inbox, t('funnel.inbox')));
      if (gen.totals === generation.current.totals) setTotals(totalsOf(stats));
    } catch (e) {
      if (gen.columns === generation.current.columns) setError(errorText(e));
    }
  }, []);

  const loadTotals = useCallback(async () => {
    const gen = ++generation.current.totals;
    try {
      const stats = await api.get<Statistics>(REQUESTS.totals);
      if (gen === generation.current.totals) setTotals(totalsOf(stats));
    } catch {
      /* the next live reload corrects them */
    }
  }, []);

  useEffect(() => {
    void load();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const off = realtime.subscribe((m) => {
      if (m.kind === 'reset' || (m.kind === 'event' && m.event.leadId)) {
        clearTimeout(timer);
        timer = setTimeout(() => void load(), 300);
      }
    });
    return () => {
      off();
      clearTimeout(timer);
    };
  }, [load]);

  const move = async (lead: Lead, to: number) => {
    if (!columns) return;
    const from = columns.find((c) => c.leads.some((l) => l.id === lead.id))?.id;
    if (from === undefined || from === to) return;
    const before = { columns, totals };
    setColumns(moveLead(columns, lead.id, to));
    setTotals(moveTotals(totals, lead.amount, from, to));
    setError(null);
    try {
      await api.put(`/leads/${lead.id}`, { statusId: statusOfColumn(to) });
      await loadTotals();
    } catch (e) {
      generation.current.columns++;
      generation.current.totals++;
      setColumns(before.columns);
      setTotals(before.totals);
      setError(t('funnel.moveFailed', { message: errorText(e) }));
    }
  };

  // biome-ignore lint/correctness/useExhaustiveDependencies: listens while a drag is on (drag !== null), reading the drag from dragRef; not again on each pointer move
  useEffect(() => {
    if (!drag) return;
    const onMove = (e: PointerEvent) => {
      const d = dragRef.current;
      if (!d) return;
      const moving = d.moving || Math.hypot(e.clientX - d.startX, e.clientY - d.startY) > 5;
      setDrag({ ...d, x: e.clientX, y: e.clientY, moving, over: moving ? statusUnder(e.clientX, e.clientY) : null });
    };
    const onUp = (e: PointerEvent) => {
      const d = dragRef.current;
      setDrag(null);
      if (!d) return;
      if (!d.moving) return navigate(`/leads/${d.lead.id}`);
      const to = statusUnder(e.clientX, e.clientY);
      if (to !== null && to !== d.fromStatus) void move(d.lead, to);
    };
    const onCancel = () => setDrag(null);
    window.addEventListener('pointermove', onMove);
    window.addEventListener('pointerup', onUp);
    window.addEventListener('pointercancel', onCancel);
    return () => {
      window.removeEventListener('pointermove', onMove);
      window.removeEventListener('pointerup', onUp);
      window.removeEventListener('pointercancel', onCancel);
    };
  }, [drag !== null]);

  const startDrag = (e: ReactPointerEvent, lead: Lead, status: number) => {
    if (e.button !== 0 || e.pointerType === 'touch') return;
    if ((e.target as HTMLElement).closest('select,button,a')) return;
    e.preventDefault();
    setDrag({ lead, fromStatus: status, startX: e.clientX, startY: e.clientY, x: e.clientX, y: e.clientY, moving: false, over: null });
  };

  if (!columns) return <div className="center-screen">{error ? t('app.error', { message: error }) : t('app.loading')}</div>;
  return (
    <div className="funnel-page">
      <h1 className="sr-only">{t('funnel.title')}</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <div className={`board${drag?.moving ? ' dragging' : ''}`}>
        {columns.map((col) => (
          <section
            key={col.id}
            className={`column${drag?.moving && drag.over === col.id ? ' over' : ''}`}
            data-status-id={col.id}
            aria-label={col.name}
          >
            <header className="column-head" style={{ borderTopColor: col.color }}>
              <h2>{col.name}</h2>
              <span className="count">{totals.get(col.id)?.count ?? col.leads.length}</span>
              <span className="funnel-sum">{t('funnel.sum', { amount: formatTotal(totals.get(col.id)?.amount ?? 0n) })}</span>
            </header>
            <ul className="cards">
              {col.leads.length === 0 && <li className="muted small pad">{t('funnel.empty')}</li>}
              {col.leads.map((lead) => (
                <li
                  key={lead.id}
                  className={`card${drag?.moving && drag.lead.id === lead.id ? ' ghosted' : ''}`}
                  data-lead-id={lead.id}
                  onPointerDown={(e) => startDrag(e, lead, col.id)}
                >
                  <div className="card-top">
                    <Avatar name={lead.customer.name || lead.customer.login} url={lead.customer.avatar} />
                    <a
                      href={`/leads/${lead.id}`}
                      onClick={(e) => {
                        e.preventDefault();
                        navigate(`/leads/${lead.id}`);
                      }}
                    >
                      {lead.customer.name || lead.customer.login || `#${lead.id}`}
                    </a>
                    {lead.amount ? <span className="amount">{lead.amount}</span> : null}
                  </div>
                  <p className="small muted clamp">{lead.message?.data.text ?? ''}</p>
                  <label className="small move-to">
                    {t('funnel.moveTo')}{' '}
                    <select value={col.id} onChange={(e) => void move(lead, Number(e.target.value))}>
                      <option value={INBOX_COLUMN}>{t('funnel.inbox')}</option>
                      {statuses
                        .filter((s) => s.type !== 'ignore')
                        .map((s) => (
                          <option key={s.id} value={s.id}>
                            {s.name}
                          </option>
                        ))}
                    </select>
                  </label>
                </li>
              ))}
            </ul>
          </section>
        ))}
      </div>
      {drag?.moving && (
        <div className="drag-ghost" style={{ left: drag.x + 8, top: drag.y + 8 }} aria-hidden="true">
          {drag.lead.customer.name || `#${drag.lead.id}`}
        </div>
      )}
    </div>
  );
}
