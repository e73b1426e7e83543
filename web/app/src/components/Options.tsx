import type { Employee, Status } from '../api/types';
import { t } from '../i18n';

/** The statuses as `<option>`s grouped by type (the pickers of a lead and of bulk moves). */
export function StatusOptions({ statuses }: { statuses: Status[] }) {
  return (
    <>
      {(['active', 'completed', 'failed', 'ignore'] as const).map((type) => (
        <optgroup key={type} label={t(`lead.statusType.${type}`)}>
          {statuses
            .filter((s) => s.type === type)
            .map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
        </optgroup>
      ))}
    </>
  );
}

/** The employees as `<option>`s, by name (or login until the invitation is accepted). */
export function EmployeeOptions({ employees }: { employees: Employee[] }) {
  return (
    <>
      {employees.map((u) => (
        <option key={u.id} value={u.id}>
          {u.name || u.login}
        </option>
      ))}
    </>
  );
}
