import { useState, type DragEvent, type ReactNode } from 'react';
import { api } from '../../api/client';
import type { Employee, Status, StatusType } from '../../api/types';
import { useCatalog } from '../../catalog';
import { t } from '../../i18n';
import type { MessageKey } from '../../i18n/en';
import { linkProps } from '../../router';
import { reorder } from '../../state/funnel';
import type { SettingsSection } from '../../routes';
import { channelName } from '../../channels/ChannelName';
import { AvailabilitySwitch } from '../../components/AvailabilitySwitch';
import { confirmDelete, ErrorLine, useAction } from './common';
import { ConnectedAppSettings, OAuthAppSettings } from './Apps';
import { AutomationSettings } from './Automation';
import { ChannelSettings } from './Channels';
import {
  AccountSettings,
  ApiKeySettings,
  PaymentTypeSettings,
  PluginSettings,
  TagSettings,
  TemplateSettings,
  WebhookSettings,
} from './More';

const SECTIONS: Array<[SettingsSection, MessageKey]> = [
  ['statuses', 'settings.statuses'],
  ['employees', 'settings.employees'],
  ['templates', 'settings.templates'],
  ['tags', 'settings.tags'],
  ['payment-types', 'settings.paymentTypes'],
  ['integrations', 'settings.integrations'],
  ['automation', 'settings.automation'],
  ['webhooks', 'settings.webhooks'],
  ['api-keys', 'settings.apiKeys'],
  ['plugins', 'settings.plugins'],
  ['oauth-apps', 'settings.oauthApps'],
  ['connected-apps', 'settings.connectedApps'],
  ['account', 'settings.account'],
];

/** The sections every employee has; the others are the owner's. */
const EVERYONE = new Set(['connected-apps']);

/** Owner settings, one section at a time (/settings/<section>). */
export default function SettingsPage({ section }: { section: string }) {
  const { isOwner } = useCatalog();
  const sections = isOwner ? SECTIONS : SECTIONS.filter(([s]) => EVERYONE.has(s));
  const [current, title] = sections.find(([s]) => s === section) ?? sections[0];
  const body: Record<string, ReactNode> = {
    statuses: <StatusSettings />,
    employees: <EmployeeSettings />,
    templates: <TemplateSettings />,
    tags: <TagSettings />,
    'payment-types': <PaymentTypeSettings />,
    integrations: <ChannelSettings />,
    automation: <AutomationSettings />,
    webhooks: <WebhookSettings />,
    'api-keys': <ApiKeySettings />,
    plugins: <PluginSettings />,
    'oauth-apps': <OAuthAppSettings />,
    'connected-apps': <ConnectedAppSettings />,
    account: <AccountSettings />,
  };
  return (
    <div className="settings">
      <nav className="settings-nav" aria-label={t('settings.title')}>
        <ul className="plain">
          {sections.map(([s, label]) => (
            <li key={s}>
              <a {...linkProps(`/settings/${s}`)} aria-current={s === current ? 'page' : undefined}>
                {t(label)}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <section className="settings-body" aria-labelledby="settings-title">
        <h1 id="settings-title">{t(title)}</h1>
        {body[current]}
      </section>
    </div>
  );
}

const TYPES: StatusType[] = ['active', 'completed', 'failed', 'ignore'];

function StatusRow({ status, onSaved }: { status: Status; onSaved: () => void }) {
  const [name, setName] = useState(status.name);
  const { run, error } = useAction();
  const save = (patch: Partial<Status>) =>
    void run(() => api.put(`/statuses/${status.id}`, { name, color: status.color, ...patch })).then((ok) => ok && onSaved());
  return (
    <>
      <input
        aria-label={t('statuses.name')}
        value={name}
        maxLength={100}
        onChange={(e) => setName(e.target.value)}
        onBlur={() => name !== status.name && name.trim() && save({ name })}
        onKeyDown={(e) => e.key === 'Enter' && name !== status.name && name.trim() && save({ name })}
      />
      <input
        type="color"
        aria-label={t('statuses.color')}
        value={/^#[0-9a-f]{6}$/i.test(status.color) ? status.color : '#888888'}
        onChange={(e) => save({ color: e.target.value })}
      />
      <ErrorLine error={error} />
    </>
  );
}

function StatusSettings() {
  const { statuses, reload } = useCatalog();
  const [form, setForm] = useState({ name: '', type: 'active' as StatusType, color: '#3b82f6' });
  const [dragging, setDragging] = useState<number | null>(null);
  const { run, error } = useAction();
  const refresh = () => void reload(['statuses']);

  const saveOrder = (list: Status[]) =>
    void run(() =>
      api.put(
        '/statuses/reorder',
        list.map((s, i) => ({ id: s.id, order: i + 1 })),
      ),
    ).then(refresh);
  const move = (list: Status[], from: number, to: number) => saveOrder(reorder(list, from, to));

  return (
    <div className="stack">
      <ErrorLine error={error} />
      <p className="muted small">{t('statuses.dragHint')}</p>
      {TYPES.map((type) => {
        const list = statuses.filter((s) => s.type === type).sort((a, b) => a.order - b.order);
        return (
          <section key={type}>
            <h2>{t(`lead.statusType.${type}`)}</h2>
            <ol className="plain sortable" data-type={type}>
              {list.map((s, i) => (
                <li
                  key={s.id}
                  className={`sortable-row${dragging === s.id ? ' dragging' : ''}`}
                  draggable
                  data-status-row={s.id}
                  onDragStart={(e: DragEvent) => {
                    setDragging(s.id);
                    e.dataTransfer.setData('text/plain', String(s.id));
                    e.dataTransfer.effectAllowed = 'move';
                  }}
                  onDragEnd={() => setDragging(null)}
                  onDragOver={(e) => {
                    if (dragging !== null && list.some((x) => x.id === dragging)) e.preventDefault();
                  }}
                  onDrop={(e) => {
                    e.preventDefault();
                    const from = list.findIndex((x) => x.id === dragging);
                    setDragging(null);
                    if (from >= 0) move(list, from, i);
                  }}
                >
                  <span className="grip" aria-hidden="true">
                    ⋮⋮
                  </span>
                  <StatusRow key={`${s.id}-${s.name}-${s.color}`} status={s} onSaved={refresh} />
                  <button
                    type="button"
                    className="ghost icon"
                    disabled={i === 0}
                    onClick={() => move(list, i, i - 1)}
                    aria-label={t('statuses.up', { name: s.name })}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    className="ghost icon"
                    disabled={i === list.length - 1}
                    onClick={() => move(list, i, i + 1)}
                    aria-label={t('statuses.down', { name: s.name })}
                  >
                    ↓
                  </button>
                  <button
                    type="button"
                    className="ghost small danger"
                    onClick={() => confirmDelete(s.name) && void run(() => api.del(`/statuses/${s.id}`)).then(refresh)}
                  >
                    {t('app.delete')}
                  </button>
                </li>
              ))}
            </ol>
          </section>
        );
      })}
      <form
        className="row wrap card-form"
        aria-label={t('statuses.add')}
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => api.post('/statuses', { name: form.name.trim(), type: form.type, color: form.color })).then((ok) => {
            if (ok) setForm({ ...form, name: '' });
            refresh();
          });
        }}
      >
        <h2 className="full">{t('statuses.add')}</h2>
        <label>
          {t('statuses.name')}
          <input
            name="status-name"
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            required
            maxLength={100}
          />
        </label>
        <label>
          {t('statuses.type')}
          <select name="status-type" value={form.type} onChange={(e) => setForm({ ...form, type: e.target.value as StatusType })}>
            {TYPES.map((ty) => (
              <option key={ty} value={ty}>
                {t(`lead.statusType.${ty}`)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t('statuses.color')}
          <input type="color" value={form.color} onChange={(e) => setForm({ ...form, color: e.target.value })} />
        </label>
        <button type="submit" className="primary">
          {t('app.add')}
        </button>
      </form>
    </div>
  );
}

function EmployeeCard({ e, all }: { e: Employee; all: Employee[] }) {
  const { integrations, reload } = useCatalog();
  const { run, error } = useAction();
  const refresh = () => void reload(['employees']);
  const allIntegrations = e.sources.length === 0;
  const none = e.sources.length === 1 && e.sources[0].saId === null;
  const reach = new Set(e.sources.map((s) => s.saId));
  const setSources = (ids: number[] | 'all') =>
    void run(() =>
      api.put(`/managers/${e.id}`, { sources: ids === 'all' ? [] : ids.length ? ids.map((saId) => ({ saId })) : [{ saId: null }] }),
    ).then(refresh);
  return (
    <li className="employee card-form" data-employee={e.login}>
      <div className="row">
        <strong>{e.name || e.login}</strong>
        <span className="muted small">{e.login}</span>
        <span className="chip-type">{e.role === 'owner' ? t('employees.owner') : t('employees.manager')}</span>
        {!e.confirmed && <span className="tag">{t('employees.pending')}</span>}
        {e.confirmed && <AvailabilitySwitch employee={e} />}
      </div>
      <ErrorLine error={error} />
      {e.role !== 'owner' && (
        <div className="stack">
          <label className="check">
            <input
              type="checkbox"
              checked={e.allowAllDeals}
              onChange={(ev) => void run(() => api.put(`/managers/${e.id}`, { allowAllDeals: ev.target.checked })).then(refresh)}
            />
            {t('employees.allowAll')}
          </label>
          <fieldset>
            <legend>{t('employees.access')}</legend>
            <label className="check">
              <input type="checkbox" checked={allIntegrations} onChange={(ev) => setSources(ev.target.checked ? 'all' : [])} />
              {t('employees.accessAll')}
            </label>
            {!allIntegrations &&
              integrations.map((i) => (
                <label className="check" key={i.id}>
                  <input
                    type="checkbox"
                    checked={!none && reach.has(i.id)}
                    onChange={(ev) => {
                      const ids = integrations
                        .filter((x) => (x.id === i.id ? ev.target.checked : !none && reach.has(x.id)))
                        .map((x) => x.id);
                      setSources(ids);
                    }}
                  />
                  {i.login || channelName(i.type)} ({channelName(i.type)})
                </label>
              ))}
          </fieldset>
          <fieldset>
            <legend>{t('employees.allowedUsers')}</legend>
            {all
              .filter((o) => o.id !== e.id)
              .map((o) => (
                <label className="check" key={o.id}>
                  <input
                    type="checkbox"
                    checked={e.allowedUsers?.includes(o.id) ?? false}
                    onChange={(ev) => {
                      const next = new Set(e.allowedUsers ?? []);
                      if (ev.target.checked) next.add(o.id);
                      else next.delete(o.id);
                      void run(() => api.put(`/managers/users-access/${e.id}`, { allowedUsers: [...next] })).then(refresh);
                    }}
                  />
                  {o.name || o.login}
                </label>
              ))}
          </fieldset>
          <button
            type="button"
            className="ghost small danger"
            onClick={() => confirmDelete(e.login) && void run(() => api.del(`/managers/${e.id}`)).then(refresh)}
          >
            {t('employees.remove')}
          </button>
        </div>
      )}
    </li>
  );
}

function EmployeeSettings() {
  const { employees, reload } = useCatalog();
  const [email, setEmail] = useState('');
  const [allowAll, setAllowAll] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const { run, error, busy } = useAction();
  return (
    <div className="stack">
      <form
        className="row wrap card-form"
        aria-label={t('employees.invite')}
        onSubmit={(e) => {
          e.preventDefault();
          const login = email.trim();
          void run(() => api.post('/managers', { login, sources: [], allowAllDeals: allowAll })).then((ok) => {
            if (ok) {
              setDone(t('employees.invited', { email: login }));
              setEmail('');
            }
            void reload(['employees']);
          });
        }}
      >
        <h2 className="full">{t('employees.invite')}</h2>
        <label>
          {t('employees.email')}
          <input name="invite-email" type="email" value={email} onChange={(e) => setEmail(e.target.value)} required maxLength={254} />
        </label>
        <label className="check">
          <input type="checkbox" checked={allowAll} onChange={(e) => setAllowAll(e.target.checked)} />
          {t('employees.allowAll')}
        </label>
        <button type="submit" className="primary" disabled={busy}>
          {t('employees.inviteSubmit')}
        </button>
        {done && (
          <p className="ok full" role="status">
            {done}
          </p>
        )}
        <ErrorLine error={error} />
      </form>
      <ul className="plain stack">
        {employees.map((e) => (
          <EmployeeCard key={e.id} e={e} all={employees} />
        ))}
      </ul>
    </div>
  );
}
