import { sql } from 'kysely';
import { claimEvent } from '../domain/automation/distribution.repo.js';
import type { WorkingHours } from '../domain/automation/working-hours.js';
import { overdueCutoff } from '../domain/automation/working-time.js';
import type { Deps } from '../domain/context.js';
import { findOwner } from '../domain/users/users.repo.js';
import { recordEvent } from '../events/outbox.js';

const PER_ACCOUNT = 200;

/** What `lead.response.overdue` carries (the realtime stream shows it as a notification). */
export type OverduePayload = {
  leadId: number;
  /** Who is told: the responsible employee, or the owner when the lead is unassigned. */
  userId: number;
  awaitingSince: number;
  targetMinutes: number;
};

/**
 * The first-response target (docs/api/automation.md): finds the open leads (inbox and active
 * statuses) whose customer has waited longer than the account's target (in working time when the
 * account has working hours), and records an internal
 * `lead.response.overdue` event once per lead and wait (claimed in `automation_claims` by the
 * lead's `awaiting_since`, in the event's transaction, so one process records it however many
 * sweep and whatever restarts meanwhile). An answer ends the wait; the next customer message
 * starts a new one.
 */
export async function sweepOverdueLeads(deps: Deps): Promise<number> {
  const db = deps.db.kysely;
  const now = deps.clock.now();
  const accounts = await db
    .selectFrom('account_automation')
    .select(['account_id', 'first_response_minutes', 'working_hours'])
    .where('first_response_minutes', 'is not', null)
    .execute();
  let recorded = 0;
  for (const { account_id: accountId, first_response_minutes: minutes, working_hours: hours } of accounts) {
    const cutoff = overdueCutoff({ targetMinutes: minutes, hours: hours ? (JSON.parse(hours) as WorkingHours) : null }, now);
    if (minutes === null || cutoff === null) continue;
    const leads = await db
      .selectFrom('leads')
      .select(['id', 'user_id', 'awaiting_since'])
      .where('account_id', '=', accountId)
      .where('status_type', 'in', ['inbox', 'active'])
      .where('awaiting_since', 'is not', null)
      .where('awaiting_since', '<=', cutoff)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('automation_claims as c')
              .select('c.event_id')
              .where('c.consumer', '=', sql<string>`${'first-response-'} || cast(leads.id as text)`)
              .whereRef('c.event_id', '=', 'leads.awaiting_since'),
          ),
        ),
      )
      .orderBy('awaiting_since')
      .limit(PER_ACCOUNT)
      .execute();
    if (!leads.length) continue;
    const owner = await findOwner(db, accountId);
    for (const lead of leads) {
      const userId = lead.user_id ?? owner?.id;
      if (lead.awaiting_since === null || userId === undefined) continue;
      const awaitingSince = lead.awaiting_since;
      await db.transaction().execute(async (trx) => {
        if (!(await claimEvent(trx, `first-response-${lead.id}`, awaitingSince, now))) return;
        const payload: OverduePayload = { leadId: lead.id, userId, awaitingSince, targetMinutes: minutes };
        await recordEvent(trx, { accountId, type: 'lead.response.overdue', leadId: lead.id, payload }, now);
        recorded++;
      });
    }
  }
  return recorded;
}
