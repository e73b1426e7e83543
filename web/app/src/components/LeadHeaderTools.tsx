import { useEffect, useState } from 'react';
import { api } from '../api/client';
import type { SingleLead } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { useShortcutHandlers } from './ShortcutsHelp';
import { EmployeeOptions, StatusOptions } from './Options';
import '../sales.css';
import { errorText } from '../i18n/errors';

/**
 * The conversation header's lead controls: status and responsible pickers, Accept (for a lead in
 * the inbox or without a responsible), and the amount. The `a` and `m` shortcuts act here.
 */
export function LeadHeaderTools({ lead, onChange }: { lead: SingleLead; onChange: (l: SingleLead) => void }) {
  const { statuses, employees, userId } = useCatalog();
  const [amount, setAmount] = useState(String(lead.amount));
  const [error, setError] = useState<string | null>(null);
  useEffect(() => setAmount(String(lead.amount)), [lead.amount]);

  const act = async (p: Promise<SingleLead>) => {
    setError(null);
    try {
      onChange(await p);
    } catch (e) {
      setError(errorText(e));
    }
  };
  const update = (patch: Partial<SingleLead>) => act(api.put<SingleLead>(`/leads/${lead.id}`, patch));
  const accept = () => act(api.put<SingleLead>(`/leads/${lead.id}/accept`, { userId }));
  const saveAmount = () => {
    const v = Math.trunc(Number(amount));
    if (!Number.isFinite(v) || v === lead.amount) return setAmount(String(lead.amount));
    void update({ amount: v });
  };

  useShortcutHandlers({
    assignToMe: () => {
      if (userId === null) return;
      void (lead.statusId === null ? accept() : update({ userId }));
    },
    markRead: () => void act(api.put<SingleLead>(`/leads/${lead.id}/read`)),
  });

  const canAccept = userId !== null && (lead.statusId === null || lead.userId === null);
  return (
    <div className="conv-header-tools small">
      {canAccept && (
        <button type="button" className="primary small" onClick={() => void accept()}>
          {t('lead.accept')}
        </button>
      )}
      <label>
        <span className="sr-only">{t('lead.status')}</span>
        <select
          value={lead.statusId ?? ''}
          onChange={(e) => void update({ statusId: e.target.value ? Number(e.target.value) : null })}
          title={t('lead.status')}
        >
          <option value="">{t('lead.inbox')}</option>
          <StatusOptions statuses={statuses} />
        </select>
      </label>
      <label>
        <span className="sr-only">{t('lead.assignee')}</span>
        <select
          value={lead.userId ?? ''}
          onChange={(e) => void update({ userId: e.target.value ? Number(e.target.value) : null })}
          title={t('lead.assignee')}
        >
          <option value="">{t('lead.unassigned')}</option>
          <EmployeeOptions employees={employees} />
        </select>
      </label>
      <label>
        <span className="sr-only">{t('lead.amount')}</span>
        <input
          type="number"
          inputMode="numeric"
          value={amount}
          title={t('lead.amount')}
          onChange={(e) => setAmount(e.target.value)}
          onBlur={saveAmount}
          onKeyDown={(e) => e.key === 'Enter' && saveAmount()}
        />
      </label>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
