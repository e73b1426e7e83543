import { useEffect, useState } from 'react';
import { realtime, type RealtimeMessage } from '../api/realtime';
import { t } from '../i18n';
import { navigate } from '../router';
import { formatDuration } from '../state/reports';
import '../sales.css';
import { LeadToast } from './LeadToast';

type Overdue = Extract<RealtimeMessage, { kind: 'overdue' }>;

/**
 * Tells the employee that a lead they are responsible for (the owner: an unassigned one) has
 * waited longer than the account's first-response target (docs/api/automation.md): a message in
 * the app, announced politely to screen readers, and a browser notification while the tab is
 * hidden when allowed.
 */
export function OverdueToasts() {
  const [toasts, setToasts] = useState<Overdue[]>([]);

  useEffect(
    () =>
      realtime.subscribe((m) => {
        if (m.kind !== 'overdue') return;
        setToasts((list) => (list.some((n) => n.id === m.id) ? list : [...list.slice(-3), m]));
        if (document.hidden && typeof Notification !== 'undefined' && Notification.permission === 'granted') {
          const n = new Notification(t('overdue.title', { id: m.leadId, minutes: m.targetMinutes }), { tag: `overdue-${m.id}` });
          n.onclick = () => {
            window.focus();
            navigate(`/leads/${m.leadId}`);
          };
        }
      }),
    [],
  );

  const dismiss = (id: number) => setToasts((list) => list.filter((n) => n.id !== id));
  return (
    <div className="toasts" role="status" aria-live="polite">
      {toasts.map((n) => (
        <LeadToast
          key={n.id}
          data={{ 'data-overdue-lead': n.leadId }}
          leadId={n.leadId}
          title={t('overdue.title', { id: n.leadId, minutes: n.targetMinutes })}
          line={t('overdue.waiting', { duration: formatDuration(Math.max(0, Date.now() - n.awaitingSince)) })}
          onDismiss={() => dismiss(n.id)}
        />
      ))}
    </div>
  );
}
