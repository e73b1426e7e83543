import { Fragment, useState } from 'react';
import { api } from '../../api/client';
import type { ApiKey, Delivery, Me, PaymentType, Plugin, Tag, Tariff, Webhook } from '../../api/types';
import { useCatalog } from '../../catalog';
import { formatDate, formatDateTime, t } from '../../i18n';
import { AddOneForm, confirmDelete, CopyButton, ErrorLine, ShownOnce, useAction, useResource } from './common';
import { TypeNamesSetting } from './TypeNamesSetting';

export function TemplateSettings() {
  const { templates, reload, userId } = useCatalog();
  const [phrase, setPhrase] = useState<Record<number, { template: string; hotkey: string; personal: boolean }>>({});
  const { run, error } = useAction();
  const refresh = () => void reload(['templates']);
  return (
    <div className="stack">
      <ErrorLine error={error} />
      {templates.map((g) => {
        const draft = phrase[g.id] ?? { template: '', hotkey: '', personal: false };
        return (
          <section key={g.id} className="card-form stack">
            <div className="row">
              <input
                aria-label={t('templates.renameGroup')}
                defaultValue={g.key}
                maxLength={100}
                onBlur={(e) =>
                  e.target.value.trim() &&
                  e.target.value !== g.key &&
                  void run(() => api.put('/templates', { key: g.key, newKey: e.target.value.trim() })).then(refresh)
                }
              />
              <button
                type="button"
                className="ghost small danger"
                onClick={() => confirmDelete(g.key) && void run(() => api.del(`/templates/group?id=${g.id}`)).then(refresh)}
              >
                {t('app.delete')}
              </button>
            </div>
            <ul className="plain stack">
              {g.templates.map((p) => (
                <li key={p.id} className="row">
                  <input
                    aria-label={t('templates.phrase')}
                    defaultValue={p.template}
                    maxLength={4000}
                    className="grow"
                    onBlur={(e) =>
                      e.target.value !== p.template &&
                      void run(() =>
                        api.put(`/templates/${g.id}/${p.id}`, { template: e.target.value, hotkey: p.hotkey || null, userId: p.userId }),
                      ).then(refresh)
                    }
                  />
                  <input
                    aria-label={t('templates.hotkey')}
                    defaultValue={p.hotkey}
                    className="narrow"
                    maxLength={30}
                    onBlur={(e) =>
                      e.target.value !== p.hotkey &&
                      void run(() =>
                        api.put(`/templates/${g.id}/${p.id}`, { template: p.template, hotkey: e.target.value || null, userId: p.userId }),
                      ).then(refresh)
                    }
                  />
                  <button
                    type="button"
                    className="ghost small danger"
                    onClick={() => void run(() => api.del(`/templates/${g.id}/${p.id}`)).then(refresh)}
                  >
                    {t('app.delete')}
                  </button>
                </li>
              ))}
            </ul>
            <form
              className="row wrap"
              onSubmit={(e) => {
                e.preventDefault();
                void run(() =>
                  api.post(`/templates/${g.id}`, {
                    template: draft.template,
                    hotkey: draft.hotkey || null,
                    userId: draft.personal ? userId : null,
                  }),
                ).then((ok) => {
                  if (ok) setPhrase({ ...phrase, [g.id]: { template: '', hotkey: '', personal: false } });
                  refresh();
                });
              }}
            >
              <input
                className="grow"
                placeholder={t('templates.phrase')}
                aria-label={t('templates.phrase')}
                value={draft.template}
                required
                maxLength={4000}
                onChange={(e) => setPhrase({ ...phrase, [g.id]: { ...draft, template: e.target.value } })}
              />
              <input
                className="narrow"
                placeholder={t('templates.hotkey')}
                aria-label={t('templates.hotkey')}
                value={draft.hotkey}
                maxLength={30}
                onChange={(e) => setPhrase({ ...phrase, [g.id]: { ...draft, hotkey: e.target.value } })}
              />
              <label className="check">
                <input
                  type="checkbox"
                  checked={draft.personal}
                  onChange={(e) => setPhrase({ ...phrase, [g.id]: { ...draft, personal: e.target.checked } })}
                />
                {t('templates.personal')}
              </label>
              <button type="submit" className="small">
                {t('templates.addPhrase')}
              </button>
            </form>
          </section>
        );
      })}
      <AddOneForm
        label={t('templates.group')}
        button={t('templates.addGroup')}
        maxLength={100}
        run={run}
        add={(key) => api.post('/templates', { key })}
        refresh={refresh}
      />
    </div>
  );
}

export function TagSettings() {
  const [filter, setFilter] = useState('');
  const { data, error } = useResource(() => api.get<Tag[]>('/tags'));
  const shown = (data ?? []).filter((x) => x.tag.toLowerCase().startsWith(filter.toLowerCase()));
  return (
    <div className="stack">
      <ErrorLine error={error} />
      <input
        type="search"
        placeholder={t('tags.filter')}
        aria-label={t('tags.filter')}
        value={filter}
        onChange={(e) => setFilter(e.target.value)}
        maxLength={100}
      />
      {data && data.length === 0 && <p className="muted">{t('tags.none')}</p>}
      <ul className="tags">
        {shown.map((x) => (
          <li key={x.id} className="tag">
            {x.tag}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function PaymentTypeSettings() {
  const { paymentTypes, reload } = useCatalog();
  const { run, error } = useAction();
  const refresh = () => void reload(['paymentTypes']);
  return (
    <div className="stack">
      <ErrorLine error={error} />
      <ul className="plain stack">
        {paymentTypes.map((p: PaymentType) => (
          <li key={p.id} className="row">
            <input
              aria-label={t('paymentTypes.title')}
              defaultValue={p.title}
              maxLength={100}
              onBlur={(e) =>
                e.target.value.trim() &&
                e.target.value !== p.title &&
                void run(() => api.put(`/payment-types/${p.id}`, { title: e.target.value.trim() })).then(refresh)
              }
            />
            <button
              type="button"
              className="ghost small danger"
              onClick={() => confirmDelete(p.title) && void run(() => api.del(`/payment-types/${p.id}`)).then(refresh)}
            >
              {t('app.delete')}
            </button>
          </li>
        ))}
      </ul>
      <AddOneForm
        label={t('paymentTypes.title')}
        button={t('app.add')}
        maxLength={100}
        run={run}
        add={(title) => api.post('/payment-types', { title })}
        refresh={refresh}
      />
    </div>
  );
}

function Deliveries({ hook }: { hook: Webhook }) {
  const { data, error, reload } = useResource(() => api.get<Delivery[]>(`/webhooks/${hook.id}/deliveries?limit=20`));
  const { run, error: actionError } = useAction();
  return (
    <div className="deliveries">
      <ErrorLine error={error ?? actionError} />
      {data && data.length === 0 && <p className="muted small">{t('webhooks.noDeliveries')}</p>}
      <table className="small">
        <tbody>
          {data?.map((d) => (
            <tr key={d.id}>
              <td>{formatDateTime(d.createdAt)}</td>
              <td>{d.type}</td>
              <td>
                <span className={`tag ${d.status}`}>{d.status}</span>
              </td>
              <td>{t('webhooks.attempts', { count: d.attempts })}</td>
              <td>{d.lastStatusCode ?? d.lastError ?? ''}</td>
              <td>
                <button
                  type="button"
                  className="small"
                  onClick={() => void run(() => api.post(`/webhooks/${hook.id}/deliveries/${d.id}/retry`)).then(reload)}
                >
                  {t('webhooks.retry')}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function WebhookSettings() {
  const { data, error, reload } = useResource(() => api.get<Webhook[]>('/webhooks'));
  const [form, setForm] = useState({ url: '', name: '' });
  const [open, setOpen] = useState<number | null>(null);
  const { run, error: actionError } = useAction();
  return (
    <div className="stack">
      <ErrorLine error={error ?? actionError} />
      <ul className="plain stack">
        {data?.map((w) => (
          <li key={w.id} className="card-form stack">
            <div className="row wrap">
              <strong>{w.name || w.url}</strong>
              <code className="small">{w.url}</code>
              <span className={`tag ${w.status ? 'ok' : 'muted'}`}>{w.status ? t('webhooks.active') : t('webhooks.disabled')}</span>
            </div>
            <div className="row wrap small">
              {t('webhooks.secret')}: <code>{w.secret}</code> <CopyButton text={w.secret} />
            </div>
            <div className="row wrap">
              <button type="button" className="small" aria-expanded={open === w.id} onClick={() => setOpen(open === w.id ? null : w.id)}>
                {t('webhooks.deliveries')}
              </button>
              <button
                type="button"
                className="small"
                onClick={() => void run(() => api.put(`/webhooks/${w.id}`, { url: w.url, status: w.status ? 0 : 1 })).then(reload)}
              >
                {w.status ? t('webhooks.disable') : t('webhooks.enable')}
              </button>
              <button
                type="button"
                className="ghost small danger"
                onClick={() => confirmDelete(w.url) && void run(() => api.del(`/webhooks/${w.id}`)).then(reload)}
              >
                {t('app.delete')}
              </button>
            </div>
            {open === w.id && <Deliveries hook={w} />}
          </li>
        ))}
      </ul>
      <form
        className="row wrap card-form"
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => api.post('/webhooks', { url: form.url.trim(), ...(form.name.trim() ? { name: form.name.trim() } : {}) })).then(
            (ok) => {
              if (ok) setForm({ url: '', name: '' });
              void reload();
            },
          );
        }}
      >
        <label className="grow">
          {t('webhooks.url')}
          <input type="url" value={form.url} required maxLength={2000} onChange={(e) => setForm({ ...form, url: e.target.value })} />
        </label>
        <label>
          {t('webhooks.name')}
          <input value={form.name} maxLength={100} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </label>
        <button type="submit" className="primary">
          {t('webhooks.add')}
        </button>
      </form>
    </div>
  );
}

export function ApiKeySettings() {
  const { data, error, reload } = useResource(() => api.get<ApiKey[]>('/account/me/api-keys'));
  const [created, setCreated] = useState<ApiKey | null>(null);
  const { run, error: actionError } = useAction();
  return (
    <div className="stack">
      <TypeNamesSetting />
      <ErrorLine error={error ?? actionError} />
      {created?.token && <ShownOnce message={t('apiKeys.once')} secret={created.token} />}
      <ul className="plain stack">
        {data?.map((k) => (
          <li key={k.id} className="row">
            <strong>{k.name}</strong>
            <button
              type="button"
              className="ghost small danger"
              onClick={() => confirmDelete(k.name) && void run(() => api.del(`/account/me/api-keys/${k.id}`)).then(reload)}
            >
              {t('apiKeys.revoke')}
            </button>
          </li>
        ))}
      </ul>
      <AddOneForm
        label={t('apiKeys.name')}
        button={t('apiKeys.create')}
        maxLength={100}
        run={run}
        add={async (name) => setCreated(await api.post<ApiKey>('/account/me/api-keys', { name }))}
        refresh={() => void reload()}
      />
    </div>
  );
}

export function PluginSettings() {
  const { data, error, reload } = useResource(() => api.get<Plugin[]>('/plugins'));
  const [form, setForm] = useState({ type: '', name: '' });
  const [created, setCreated] = useState<Plugin | null>(null);
  const { run, error: actionError } = useAction();
  return (
    <div className="stack">
      <ErrorLine error={error ?? actionError} />
      {created?.pluginToken && <ShownOnce message={t('plugins.once')} secret={created.pluginToken} />}
      <ul className="plain stack">
        {data?.map((p) => (
          <li key={p.id} className="row">
            <span className="chip-type">{p.type}</span>
            <strong>{p.name}</strong>
            <span className="tag">{p.status}</span>
            <button
              type="button"
              className="ghost small danger"
              onClick={() => confirmDelete(p.name || p.type) && void run(() => api.del(`/plugins/${p.id}`)).then(reload)}
            >
              {t('app.delete')}
            </button>
          </li>
        ))}
      </ul>
      <form
        className="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            setCreated(
              await api.post<Plugin>('/plugins', { type: form.type.trim(), ...(form.name.trim() ? { name: form.name.trim() } : {}) }),
            );
            setForm({ type: '', name: '' });
          }).then(reload);
        }}
      >
        <input
          placeholder={t('plugins.type')}
          aria-label={t('plugins.type')}
          value={form.type}
          required
          maxLength={100}
          onChange={(e) => setForm({ ...form, type: e.target.value })}
        />
        <input
          placeholder={t('plugins.name')}
          aria-label={t('plugins.name')}
          value={form.name}
          maxLength={100}
          onChange={(e) => setForm({ ...form, name: e.target.value })}
        />
        <button type="submit" className="primary">
          {t('plugins.create')}
        </button>
      </form>
    </div>
  );
}

export function AccountSettings() {
  const { data: me, error } = useResource(() => api.get<Me>('/account/me'));
  const { data: tariff, error: tariffError } = useResource(() => api.get<Tariff>('/account/me/tariff'));
  const rows: Array<[string, string | number | undefined]> = [
    [t('account.id'), me ? `#${me.account.id}` : undefined],
    [t('account.status'), me ? t(me.account.status === 'expired' ? 'accountStatus.expired' : 'accountStatus.active') : undefined],
    [t('account.user'), me?.user ? `${me.user.name} <${me.user.login}>` : undefined],
    [t('account.trial'), tariff ? (tariff.trial ? t('app.yes') : t('app.no')) : undefined],
    [t('account.expiration'), tariff ? formatDate(tariff.expiration) : undefined],
    [t('account.balance'), tariff ? `${tariff.value} ${tariff.currency}` : undefined],
    [t('account.period'), tariff?.period],
    [t('account.subscription'), tariff ? (tariff.subscription ? t('app.yes') : t('app.no')) : undefined],
    [t('account.price'), tariff?.price],
    [t('account.packages'), tariff ? tariff.packages.map((p) => `${p.name} × ${p.count}`).join(', ') || t('app.none') : undefined],
  ];
  return (
    <div className="stack">
      <ErrorLine error={error ?? tariffError} />
      <dl className="facts">
        {rows.map(([k, v]) => (
          <Fragment key={k}>
            <dt>{k}</dt>
            <dd>{v ?? '…'}</dd>
          </Fragment>
        ))}
      </dl>
    </div>
  );
}
