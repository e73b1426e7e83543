import { dialectOf, type Executor } from '../../db/database.js';
import type { LeadRow } from '../../db/schema.js';
import { eventPayloadText, eventsInserted, type NewEvent } from '../../events/outbox.js';
import { recordLeadChange } from '../leads/lead-events.js';
import { presentLead } from '../leads/lead-presenter.js';
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
  // The lead locked (PostgreSQL) and read as it is now, in one statement; then the distribution:
  // every locker takes a lead before its integration's distribution (distributeLocked too).
  let locking = trx.selectFrom('leads').selectAll().where('id', '=', lead.id).where('account_id', '=', lead.account_id);
  if (dialectOf(trx) === 'postgres') locking = locking.forUpdate();
  const current = await locking.executeTakeFirst();
  const settings = await repo.findDistribution(trx, lead.integration_id, true);
  const effective = mode ?? settings?.mode ?? 'off';
  if (effective === 'off') return current ?? lead;
  if (!current || !assignable(current)) return current ?? lead;
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

function assignable(lead: LeadRow): boolean {
  return lead.user_id === null && (lead.status_type === 'inbox' || lead.status_type === 'active');
}

/**
 * New leads assigned by their integrations' distributions in the caller's transaction, as
 * {@link distributeLead} one after another would: `leads` are locked (PostgreSQL) and read as they
 * are now, in id order. Each integration's distribution is locked and read once, its employees and
 * (least busy) their open leads counted once and the counts kept as leads are assigned, and its
 * position moved once to the last employee chosen. Answers the leads assigned, as they are after.
 */
export async function distributeLocked(trx: Executor, leads: LeadRow[], now: number): Promise<Map<number, LeadRow>> {
  const out = new Map<number, LeadRow>();
  const open = leads.filter(assignable);
  if (!open.length) return out;
  const settings = await repo.lockDistributions(trx, [...new Set(open.map((l) => l.integration_id))]);
  const positions: Array<{ integrationId: number; userId: number }> = [];
  for (const row of settings) {
    if (row.mode === 'off') continue;
    const mine = open.filter((l) => l.integration_id === row.integration_id).sort((a, b) => a.id - b.id);
    const reaching = await repo.employeesReaching(trx, row.account_id, row.integration_id);
    const chosen = row.employees ? new Set(parseIdList(row.employees)) : undefined;
    const candidates = reaching
      .filter((e) => (!chosen || chosen.has(e.id)) && (row.only_available === 0 || e.available === 1))
      .map((e) => e.id);
    const counts = row.mode === 'least_busy' ? await repo.openLeadCounts(trx, row.account_id, candidates) : undefined;
    let last = row.last_user_id;
    for (const lead of mine) {
      const userId = pickEmployee(candidates, last, counts);
      if (userId === undefined) break;
      last = userId;
      counts?.set(userId, (counts.get(userId) ?? 0) + 1);
      out.set(lead.id, { ...lead, user_id: userId, updated_at: now });
    }
    if (last !== row.last_user_id && last !== null) positions.push({ integrationId: row.integration_id, userId: last });
  }
  const assigned = open.filter((lead) => out.has(lead.id));
  if (!assigned.length) return out;
  if (dialectOf(trx) !== 'postgres') {
    for (const lead of assigned) {
      const after = await updateLead(trx, lead.account_id, lead.id, { user_id: out.get(lead.id)?.user_id, updated_at: now });
      await recordLeadChange(trx, lead, after, changedLeadFields(lead, after), now);
      out.set(lead.id, after);
    }
    for (const p of positions) await repo.movePosition(trx, p.integrationId, p.userId);
    return out;
  }
  // PostgreSQL: the leads (locked by the caller), positions and events in one statement, the
  // events as recordLeadChange records them.
  const events: NewEvent[] = assigned.map((lead) => {
    const after = out.get(lead.id) as LeadRow;
    return {
      accountId: lead.account_id,
      type: 'lead.changed',
      leadId: lead.id,
      payload: { leadId: lead.id, changes: changedLeadFields(lead, after), lead: presentLead(after) },
    };
  });
  const { eventIds, hooks } = await repo.assignLeads(trx, {
    leads: assigned.map((lead) => ({ id: lead.id, userId: out.get(lead.id)?.user_id as number })),
    positions,
    events: events.map((e) => ({ accountId: e.accountId, leadId: e.leadId as number, payload: eventPayloadText(e) })),
    now,
  });
  await eventsInserted(trx, events, eventIds, hooks, now);
  return out;
}
