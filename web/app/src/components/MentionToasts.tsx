import { useEffect, useState } from 'react';
import { realtime } from '../api/realtime';
import type { Note } from '../api/types';
import { employeeName, useCatalog } from '../catalog';
import { t } from '../i18n';
import { navigate } from '../router';
import '../sales.css';
import { LeadToast } from './LeadToast';

/**
 * Tells the employee that a colleague mentioned them in a note: a message in the app (announced
 * politely to screen readers) and, while the tab is hidden, a browser notification when allowed.
 */
export function MentionToasts() {
  const { employees, userId } = useCatalog();
  const [toasts, setToasts] = useState<Note[]>([]);

  useEffect(
    () =>
      realtime.subscribe((m) => {
        if (m.kind !== 'event' || m.event.type !== 'lead.note.created' || !m.event.note) return;
        const note = m.event.note;
        if (userId === null || !note.mentions.includes(userId) || note.userId === userId) return;
        setToasts((list) => (list.some((n) => n.id === note.id) ? list : [...list.slice(-3), note]));
        if (document.hidden && typeof Notification !== 'undefined' && Notification.permission === 'granted') {
          const n = new Notification(t('notes.mentioned', { name: employeeName(employees, note.userId) ?? '?', id: note.leadId }), {
            body: note.text,
            tag: `note-${note.id}`,
          });
          n.onclick = () => {
            window.focus();
            navigate(`/leads/${note.leadId}`);
          };
        }
      }),
    [employees, userId],
  );

  const dismiss = (id: number) => setToasts((list) => list.filter((n) => n.id !== id));
  return (
    <div className="toasts" role="status" aria-live="polite">
      {toasts.map((n) => (
        <LeadToast
          key={n.id}
          data={{ 'data-note-id': n.id }}
          leadId={n.leadId}
          title={t('notes.mentioned', { name: employeeName(employees, n.userId) ?? '?', id: n.leadId })}
          line={n.text.length > 160 ? `${n.text.slice(0, 160)}…` : n.text}
          onDismiss={() => dismiss(n.id)}
        />
      ))}
    </div>
  );
}
