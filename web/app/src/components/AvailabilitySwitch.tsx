import { useState } from 'react';
import { api } from '../api/client';
import type { Employee } from '../api/types';
import { useCatalog } from '../catalog';
import { t } from '../i18n';
import { errorText } from '../i18n/errors';
import { ErrorToast } from './ErrorToast';

/**
 * "Available / Away" (`available`, docs/api/automation.md): distribution passes over employees who
 * are away. Without `employee`, the signed-in employee's own switch; with it, that employee's, as
 * the owner changes it in the team list. A failed change is shown as a toast and the switch stays
 * as the server has it.
 */
export function AvailabilitySwitch({ employee }: { employee?: Employee }) {
  const { employees, userId, reload } = useCatalog();
  const who = employee ?? employees.find((e) => e.id === userId);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  if (!who) return null;
  const available = who.available;
  const label = employee ? t('availability.of', { name: employee.name || employee.login }) : t('availability.label');
  const change = async () => {
    setBusy(true);
    setFailure(null);
    try {
      await api.put<Employee>(`/managers/${who.id}`, { available: !available });
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
        aria-label={label}
        title={label}
        data-available={available}
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
