import { useCallback, useEffect, useState } from 'react';
import { api, query } from '../api/client';
import type { Customer, Lead } from '../api/types';
import { statusName, useCatalog } from '../catalog';
import { formatTime, t } from '../i18n';
import { linkProps } from '../router';
import { Avatar } from './Avatar';
import '../sales.css';
import { ChannelName } from '../channels/ChannelName';
import { errorText } from '../i18n/errors';
import { SamePhoneNotice } from './SamePhoneNotice';

function Editable({
  label,
  value,
  type = 'text',
  onSave,
}: {
  label: string;
  value: string;
  type?: string;
  onSave: (v: string) => Promise<unknown>;
}) {
  const [draft, setDraft] = useState(value);
  const [state, setState] = useState<string>('');
  useEffect(() => setDraft(value), [value]);
  const save = async () => {
    if (draft === value) return;
    try {
      await onSave(draft);
      setState(t('app.saved'));
    } catch (e) {
      setState(errorText(e));
    }
  };
  return (
    <label className="field">
      {label}
      <input
        type={type}
        value={draft}
        maxLength={1000}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={() => void save()}
        onKeyDown={(e) => e.key === 'Enter' && void save()}
      />
      {state && <small aria-live="polite">{state}</small>}
    </label>
  );
}

/**
 * The customer card: every profile of the customer across channels, its other leads (open and
 * archived, ignore statuses included), its editable contact details, and an avatar refresh.
 */
export function CustomerCard({ customerId, leadId }: { customerId: number; leadId: number }) {
  const { statuses } = useCatalog();
  const [customer, setCustomer] = useState<Customer | null>(null);
  const [leads, setLeads] = useState<Lead[]>([]);
  const [note, setNote] = useState<string | null>(null);
  // Loaded again when another customer is merged into this one: its leads join the list.
  const loadLeads = useCallback(
    () => api.get<Lead[]>(`/leads${query({ customer: customerId, ignore: true, limit: 50 })}`).then(setLeads, () => undefined),
    [customerId],
  );

  useEffect(() => {
    void api.get<Customer>(`/customers/${customerId}`).then(setCustomer, () => undefined);
  }, [customerId]);
  useEffect(() => {
    void loadLeads();
  }, [loadLeads]);

  if (!customer) return null;
  const save = async (patch: Partial<Customer>) => setCustomer(await api.put<Customer>(`/customers/${customerId}`, patch));
  const refresh = async () => {
    setNote(null);
    try {
      setCustomer(await api.post<Customer>(`/customers/${customerId}/update`, {}));
      setNote(t('card.avatarRefreshed'));
    } catch (e) {
      setNote(errorText(e));
    }
  };
  const others = leads.filter((l) => l.id !== leadId);
  const archived = (l: Lead) => {
    const type = statuses.find((s) => s.id === l.statusId)?.type;
    return type === 'completed' || type === 'failed' || type === 'ignore';
  };
  return (
    <section className="panel-section" aria-labelledby={`card-${customerId}`}>
      <h3 id={`card-${customerId}`}>{t('card.title')}</h3>
      <div className="card-avatar">
        <Avatar name={customer.name || customer.login} url={customer.avatar} />
        <button type="button" className="small ghost" onClick={() => void refresh()}>
          {t('card.refreshAvatar')}
        </button>
        {note && (
          <small role="status" className="muted">
            {note}
          </small>
        )}
      </div>
      <SamePhoneNotice
        customer={customer}
        onMerged={(merged) => {
          setCustomer(merged);
          void loadLeads();
        }}
      />
      <Editable label={t('lead.name')} value={customer.name} onSave={(v) => save({ name: v })} />
      <Editable label={t('lead.phone')} type="tel" value={customer.phone ?? ''} onSave={(v) => save({ phone: v })} />
      <Editable label={t('lead.email')} type="email" value={customer.email ?? ''} onSave={(v) => save({ email: v })} />
      <Editable label={t('lead.customerAddress')} value={customer.address ?? ''} onSave={(v) => save({ address: v })} />
      {customer.profiles.length > 0 && (
        <>
          <h4>{t('lead.profiles')}</h4>
          <ul className="plain">
            {customer.profiles.map((p) => (
              <li key={p.id}>
                <span className="chip-type">
                  <ChannelName type={p.type} />
                </span>{' '}
                {p.profileUrl && /^https?:/i.test(p.profileUrl) ? (
                  <a href={p.profileUrl} target="_blank" rel="noreferrer">
                    {p.login || p.socialId}
                  </a>
                ) : (
                  p.login || p.socialId
                )}
              </li>
            ))}
          </ul>
        </>
      )}
      <h4>{t('card.otherLeads')}</h4>
      {others.length === 0 ? (
        <p className="muted small">{t('card.noOtherLeads')}</p>
      ) : (
        <ul className="other-leads">
          {others.map((l) => (
            <li key={l.id}>
              <a {...linkProps(`/leads/${l.id}`)}>{t('lead.title', { id: l.id })}</a>
              <span className="small muted">
                {statusName(statuses, l.statusId) ?? t('lead.inbox')} · {archived(l) ? t('card.archived') : t('card.open')} ·{' '}
                {formatTime(Date.parse(l.message?.timestamp ?? l.createdAt))}
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
