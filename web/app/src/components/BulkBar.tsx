import { useState } from 'react';
import { api } from '../api/client';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { runBulk, type BulkOutcome } from '../state/selection';
import { EmployeeOptions, StatusOptions } from './Options';
import '../sales.css';

type Action =
  | { kind: 'read' }
  | { kind: 'unread' }
  | { kind: 'status'; statusId: number | null }
  | { kind: 'assign'; userId: number | null }
  | { kind: 'accept' }
  | { kind: 'tag' | 'untag'; tag: string };

/**
 * Bulk work on the selected leads. The API changes one lead per request, so the bar runs them a
 * few at a time, shows progress, and lists the leads that failed (with the reason) when it ends.
 */
export function BulkBar({
  ids,
  onSelectPage,
  onClear,
  onDone,
}: {
  ids: number[];
  onSelectPage: () => void;
  onClear: () => void;
  onDone: () => void;
}) {
  const { statuses, employees, userId } = useCatalog();
  const [tag, setTag] = useState('');
  const [progress, setProgress] = useState<BulkOutcome | null>(null);
  const busy = progress !== null && progress.done < progress.total;

  const call = (a: Action, id: number): Promise<unknown> => {
    switch (a.kind) {
      case 'read':
        return api.put(`/leads/${id}/read`);
      case 'unread':
        return api.put(`/leads/${id}/unread`);
      case 'status':
        return api.put(`/leads/${id}`, { statusId: a.statusId });
      case 'assign':
        return api.put(`/leads/${id}`, { userId: a.userId });
      case 'accept':
        return api.put(`/leads/${id}/accept`, { userId });
      case 'tag':
        return api.post(`/tags/${id}/${encodeURIComponent(a.tag)}`);
      case 'untag':
        return api.del(`/tags/${id}/${encodeURIComponent(a.tag)}`);
    }
  };
  const run = async (a: Action) => {
    if (!ids.length || busy) return;
    setProgress({ done: 0, total: ids.length, failures: [] });
    await runBulk(ids, (id) => call(a, id), setProgress);
    onDone();
  };
  const tagValue = tag.trim();

  return (
    <section className="bulk" aria-label={t('bulk.selected', { count: ids.length })}>
      <div className="bulk-bar small">
        <strong aria-live="polite">{t('bulk.selected', { count: ids.length })}</strong>
        <button type="button" className="small ghost" onClick={onSelectPage}>
          {t('bulk.selectPage')}
        </button>
        <button type="button" className="small ghost" onClick={onClear} disabled={!ids.length}>
          {t('bulk.clear')}
        </button>
        <button type="button" className="small" disabled={!ids.length || busy} onClick={() => void run({ kind: 'read' })}>
          {t('bulk.markRead')}
        </button>
        <button type="button" className="small" disabled={!ids.length || busy} onClick={() => void run({ kind: 'unread' })}>
          {t('bulk.markUnread')}
        </button>
        {userId !== null && (
          <button type="button" className="small" disabled={!ids.length || busy} onClick={() => void run({ kind: 'accept' })}>
            {t('bulk.accept')}
          </button>
        )}
        <select
          aria-label={t('bulk.moveTo')}
          value=""
          disabled={!ids.length || busy}
          onChange={(e) =>
            e.target.value && void run({ kind: 'status', statusId: e.target.value === 'inbox' ? null : Number(e.target.value) })
          }
        >
          <option value="">{t('bulk.moveTo')}</option>
          <option value="inbox">{t('lead.inbox')}</option>
          <StatusOptions statuses={statuses} />
        </select>
        <select
          aria-label={t('bulk.assignTo')}
          value=""
          disabled={!ids.length || busy}
          onChange={(e) =>
            e.target.value && void run({ kind: 'assign', userId: e.target.value === 'none' ? null : Number(e.target.value) })
          }
        >
          <option value="">{t('bulk.assignTo')}</option>
          <option value="none">{t('lead.unassigned')}</option>
          <EmployeeOptions employees={employees} />
        </select>
        <input
          value={tag}
          onChange={(e) => setTag(e.target.value)}
          aria-label={t('bulk.tagValue')}
          placeholder={t('bulk.tagValue')}
          maxLength={100}
        />
        <button
          type="button"
          className="small"
          disabled={!ids.length || busy || !tagValue}
          onClick={() => void run({ kind: 'tag', tag: tagValue })}
        >
          {t('bulk.tag')}
        </button>
        <button
          type="button"
          className="small"
          disabled={!ids.length || busy || !tagValue}
          onClick={() => void run({ kind: 'untag', tag: tagValue })}
        >
          {t('bulk.untag')}
        </button>
      </div>
      {progress && (
        <div className="bulk-report" role="status">
          {busy ? (
            <>
              <progress
                max={progress.total}
                value={progress.done}
                aria-label={t('bulk.progress', { done: progress.done, total: progress.total })}
              />{' '}
              {t('bulk.progress', { done: progress.done, total: progress.total })}
            </>
          ) : (
            <span>{t('bulk.allDone', { count: progress.total - progress.failures.length })}</span>
          )}
          {progress.failures.length > 0 && (
            <div className="error">
              {t('bulk.failed', { count: progress.failures.length })}
              <ul>
                {progress.failures.map((f) => (
                  <li key={f.id}>
                    {t('lead.title', { id: f.id })}: {f.message}
                  </li>
                ))}
              </ul>
            </div>
          )}
        </div>
      )}
      {!ids.length && !progress && <p className="muted small pad">{t('bulk.hint')}</p>}
    </section>
  );
}
