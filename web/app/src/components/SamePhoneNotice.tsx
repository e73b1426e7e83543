import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { Customer, SamePhoneCustomer } from '../api/types';
import { t } from '../i18n';
import { errorText } from '../i18n/errors';

/**
 * Other customers of the account with this customer's phone, each with an offer to merge it into
 * this one (docs/api/resources.md "Customers with the same phone, and merging them"). Merging is
 * asked and confirmed, never done by itself: a shared family phone is not one person.
 */
export function SamePhoneNotice({ customer, onMerged }: { customer: Customer; onMerged: (c: Customer) => void }) {
  const [others, setOthers] = useState<SamePhoneCustomer[]>([]);
  const [asking, setAsking] = useState<number | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const { id, phone } = customer;

  useEffect(() => {
    if (!phone) {
      setOthers([]);
      return;
    }
    void api.get<{ customers: SamePhoneCustomer[] }>(`/customers/${id}/same-phone`).then(
      (r) => setOthers(r.customers),
      () => undefined,
    );
  }, [id, phone]);

  const merge = async (from: number) => {
    setNote(null);
    try {
      const merged = await api.post<Customer>(`/customers/${id}/merge`, { from });
      setOthers((list) => list.filter((o) => o.id !== from));
      setAsking(null);
      setNote(t('card.merged'));
      onMerged(merged);
    } catch (e) {
      setNote(errorText(e));
    }
  };

  if (!others.length && !note) return null;
  return (
    <div className="same-phone">
      {others.map((o) => (
        <div key={o.id} className="notice">
          <p className="small">{t('card.samePhone', { name: o.name, phone: o.phone })}</p>
          {asking === o.id ? (
            <>
              <p className="small">{t('card.mergeConfirm', { name: o.name })}</p>
              <button type="button" className="small" onClick={() => void merge(o.id)}>
                {t('card.mergeYes')}
              </button>{' '}
              <button type="button" className="small ghost" onClick={() => setAsking(null)}>
                {t('app.cancel')}
              </button>
            </>
          ) : (
            <button type="button" className="small ghost" onClick={() => setAsking(o.id)}>
              {t('card.mergeOffer', { name: o.name })}
            </button>
          )}
        </div>
      ))}
      {note && (
        <small role="status" className="muted">
          {note}
        </small>
      )}
    </div>
  );
}
