import { useState } from 'react';
import { api } from '../api/client';
import type { Employee } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { errorText } from '../i18n/errors';
import { ErrorToast } from './ErrorToast';

/**
 * "Available / Away" for the signed-in employee (`available`, docs/api/automation.md): distribution
 * passes over employees who are away. A failed change is shown as a toast and the switch stays as
 * the server has it.
 */
export function AvailabilitySwitch() {
  const { employees, userId, reload } = useCatalog();
  const me = employees.find((e) => e.id === userId);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  if (!me || userId === null) return null;
  const available = me.available;
  const change = async () => {
    setBusy(true);
    setFailure(null);
    try {
      await api.put<Employee>(`/managers/${userId}`, { available: !available });
      await reload(['employees']);
    } catch (e) {
      setFailure(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        role="switch"
        aria-checked={available}
        aria-label={t('availability.label')}
        title={t('availability.label')}
        className={`availability small${available ? ' available' : ''}`}
        disabled={busy}
        onClick={() => void change()}
      >
        <span className="presence-dot" aria-hidden="true" />
        {available ? t('availability.available') : t('availability.away')}
      </button>
      {failure && <ErrorToast text={t('availability.failed', { reason: failure })} onDismiss={() => setFailure(null)} />}
    </>
  );
}
