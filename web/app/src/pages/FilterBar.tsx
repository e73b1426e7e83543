import { useState, type FormEvent } from 'react';
import type { Status } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { noFilters, type Filters, type ListName } from '../state/leads';
import { channelName } from '../channels/ChannelName';

const num = (v: string) => (v ? [Number(v)] : []);

/** The list filters: integration, channel type, tags, employee, status, reading state, waiting past the response target. */
export function FilterBar({
  list,
  value,
  onChange,
  statuses,
}: {
  list: ListName;
  value: Filters;
  onChange: (f: Filters) => void;
  statuses: Status[];
}) {
  const { integrations, employees } = useCatalog();
  const [draft, setDraft] = useState(value);
  const [tags, setTags] = useState(value.tags.join(', '));
  const types = [...new Set(integrations.map((i) => i.type))];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onChange({
      ...draft,
      tags: tags
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    });
  };
  return (
    <form className="filters" onSubmit={submit} aria-label={t('filters.title')}>
      <label>
        {t('filters.integration')}
        <select value={draft.sa[0] ?? ''} onChange={(e) => setDraft({ ...draft, sa: num(e.target.value) })}>
          <option value="">{t('filters.any')}</option>
          {integrations.map((i) => (
            <option key={i.id} value={i.id}>
              {i.login || channelName(i.type)} ({channelName(i.type)})
            </option>
          ))}
        </select>
      </label>
      <label>
        {t('filters.channel')}
        <select value={draft.types[0] ?? ''} onChange={(e) => setDraft({ ...draft, types: e.target.value ? [e.target.value] : [] })}>
          <option value="">{t('filters.any')}</option>
          {types.map((ty) => (
            <option key={ty} value={ty}>
              {channelName(ty)}
            </option>
          ))}
        </select>
      </label>
      <label>
        {t('filters.employee')}
        <select value={draft.users[0] ?? ''} onChange={(e) => setDraft({ ...draft, users: num(e.target.value) })}>
          <option value="">{t('filters.any')}</option>
          {employees.map((u) => (
            <option key={u.id} value={u.id}>
              {u.name || u.login}
            </option>
          ))}
        </select>
      </label>
      {list !== 'inbox' && (
        <label>
          {t('filters.status')}
          <select value={draft.statuses[0] ?? ''} onChange={(e) => setDraft({ ...draft, statuses: num(e.target.value) })}>
            <option value="">{t('filters.any')}</option>
            {statuses.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
      )}
      <label>
        {t('filters.unread')}
        <select value={draft.unread} onChange={(e) => setDraft({ ...draft, unread: e.target.value as Filters['unread'] })}>
          <option value="">{t('filters.any')}</option>
          {(['unread', 'read', 'unanswered', 'answered'] as const).map((u) => (
            <option key={u} value={u}>
              {t(`filters.unread.${u}`)}
            </option>
          ))}
        </select>
      </label>
      <label className="row">
        <input type="checkbox" checked={draft.overdue} onChange={(e) => setDraft({ ...draft, overdue: e.target.checked })} />
        {t('filters.overdue')}
      </label>
      <label>
        {t('filters.tags')}
        <input value={tags} onChange={(e) => setTags(e.target.value)} maxLength={500} />
      </label>
      <div className="row">
        <button type="submit" className="primary small">
          {t('filters.apply')}
        </button>
        <button
          type="button"
          className="ghost small"
          onClick={() => {
            setDraft(noFilters);
            setTags('');
            onChange(noFilters);
          }}
        >
          {t('filters.clear')}
        </button>
      </div>
    </form>
  );
}
