import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid, notFound, type ErrorDetail } from '../errors.js';
import { findIntegration } from '../integrations/integrations.repo.js';
import { parseIdList, requireOwner } from '../policy/policy.js';
import type { DistributionMode } from './distribution.js';
import * as repo from './distribution.repo.js';

export interface DistributionSettings {
  mode: DistributionMode;
  /** Absent: every confirmed employee reaching the integration. */
  employees?: number[];
  onlyAvailable: boolean;
}

/** An integration's distribution of new leads (docs/api/automation.md), owner only. */
export class DistributionService {
  constructor(private readonly deps: Deps) {}

  async get(auth: AuthContext, integrationId: number): Promise<DistributionSettings> {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    if (!(await findIntegration(db, auth.accountId, integrationId))) throw notFound('Integration not found');
    const row = await repo.findDistribution(db, integrationId);
    if (!row) return { mode: 'off', onlyAvailable: true };
    return {
      mode: row.mode,
      ...(row.employees === null ? {} : { employees: parseIdList(row.employees) }),
      onlyAvailable: row.only_available === 1,
    };
  }

  /**
   * Replaces the settings. Every listed employee must be a confirmed employee of the account who
   * reaches the integration; otherwise 400 naming the entry, and nothing changes.
   */
  async put(auth: AuthContext, integrationId: number, input: { mode: DistributionMode; employees?: number[]; onlyAvailable?: boolean }) {
    requireOwner(auth);
    const db = this.deps.db.kysely;
    await db.transaction().execute(async (trx) => {
      if (!(await findIntegration(trx, auth.accountId, integrationId))) throw notFound('Integration not found');
      if (input.employees) {
        const reaching = new Set((await repo.employeesReaching(trx, auth.accountId, integrationId)).map((e) => e.id));
        const details: ErrorDetail[] = input.employees.flatMap((id, i) =>
          reaching.has(id) ? [] : [{ path: `body.employees.${i}`, message: 'not a confirmed employee reaching this integration' }],
        );
        if (details.length) throw invalid('employees names someone who cannot take these leads', details);
      }
      await repo.saveDistribution(trx, {
        integration_id: integrationId,
        account_id: auth.accountId,
        mode: input.mode,
        employees: input.employees ? JSON.stringify([...new Set(input.employees)]) : null,
        only_available: input.onlyAvailable === false ? 0 : 1,
        last_user_id: null,
        updated_at: this.deps.clock.now(),
      });
    });
    return this.get(auth, integrationId);
  }
}
