import type { Executor } from '../../db/database.js';
import type { LeadRow } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import { presentLead } from './lead-presenter.js';

/**
 * The events of one change to a lead (docs/api/webhooks.md), from the one place every change goes
 * through: `lead.changed` with the names of the changed fields, and, when the status changed,
 * `lead.changed.status` too (subscribers of either see the move). Nothing when nothing changed.
 */
export async function recordLeadChange(trx: Executor, before: LeadRow, after: LeadRow, changes: string[], now: number): Promise<void> {
  if (!changes.length) return;
  const lead = presentLead(after);
  const base = { accountId: after.account_id, leadId: after.id };
  await recordEvent(trx, { ...base, type: 'lead.changed', payload: { leadId: after.id, changes, lead } }, now);
  if (before.status_id !== after.status_id) {
    await recordEvent(
      trx,
      {
        ...base,
        type: 'lead.changed.status',
        payload: { leadId: after.id, statusId: after.status_id, previousStatusId: before.status_id, lead },
      },
      now,
    );
  }
}
