import { dialectOf, type Executor } from '../../db/database.js';
import type { LeadRow } from '../../db/schema.js';
import { recordLeadChange } from '../leads/lead-events.js';
import { changedLeadFields } from '../leads/lead-fields.js';
import { updateLead } from '../leads/leads.repo.js';
import { parseIdList } from '../policy/policy.js';
import * as repo from './distribution.repo.js';

export const DISTRIBUTION_MODES = ['off', 'round_robin', 'least_busy'] as const;
export type DistributionMode = (typeof DISTRIBUTION_MODES)[number];

/**
 * The next employee after `last` in id order, wrapping round: the round-robin rotation. With
 * `counts` (least busy) only the employees with the fewest open leads take part, in the same order.
 */
export function pickEmployee(candidates: number[], last: number | null, counts?: Map<number, number>): number | undefined {
  let pool = [...candidates].sort((a, b) => a - b);
  if (counts) {
    const fewest = Math.min(...pool.map((id) => counts.get(id) ?? 0));
    pool = pool.filter((id) => (counts.get(id) ?? 0) === fewest);
  }
  if (!pool.length) return undefined;
  return pool.find((id) => last === null || id > last) ?? pool[0];
}

/**
 * Assigns an unassigned open lead by its integration's distribution, or by `mode` (a rule's
 * `distribute` action) with the integration's employees; in the caller's transaction. The
 * distribution row is locked first (PostgreSQL), so the rotation advances once per lead whatever
 * the number of processes. Answers the lead as it is afterwards; unchanged when nobody is
 * available, the lead is taken already or distribution is off.
 */
export async function distributeLead(trx: Executor, lead: LeadRow, now: number, mode?: DistributionMode): Promise<LeadRow> {
  const settings = await repo.findDistribution(trx, lead.integration_id, true);
  const effective = mode ?? settings?.mode ?? 'off';
  if (effective === 'off') return lead;
  // The lead locked (PostgreSQL) and read as it is now, in one statement.
  let locking = trx.selectFrom('leads').selectAll().where('id', '=', lead.id).where('account_id', '=', lead.account_id);
  if (dialectOf(trx) === 'postgres') locking = locking.forUpdate();
  const current = await locking.executeTakeFirst();
  if (!current || current.user_id !== null || (current.status_type !== 'inbox' && current.status_type !== 'active')) return current ?? lead;
  const reaching = await repo.employeesReaching(trx, lead.account_id, lead.integration_id);
  const chosen = settings?.employees ? new Set(parseIdList(settings.employees)) : undefined;
  const onlyAvailable = settings ? settings.only_available === 1 : true;
  const candidates = reaching.filter((e) => (!chosen || chosen.has(e.id)) && (!onlyAvailable || e.available === 1)).map((e) => e.id);
  const counts = effective === 'least_busy' ? await repo.openLeadCounts(trx, lead.account_id, candidates) : undefined;
  const userId = pickEmployee(candidates, settings?.last_user_id ?? null, counts);
  if (userId === undefined) return current;
  if (settings) await repo.movePosition(trx, lead.integration_id, userId);
  else {
    await repo.saveDistribution(trx, {
      integration_id: lead.integration_id,
      account_id: lead.account_id,
      mode: 'off',
      employees: null,
      only_available: 1,
      last_user_id: userId,
      updated_at: now,
    });
  }
  const after = await updateLead(trx, lead.account_id, lead.id, { user_id: userId, updated_at: now });
  await recordLeadChange(trx, current, after, changedLeadFields(current, after), now);
  return after;
}
