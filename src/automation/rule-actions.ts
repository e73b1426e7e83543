import { dialectOf, type Executor } from '../db/database.js';
import type { LeadRow } from '../db/schema.js';
import type { AuthContext } from '../domain/auth/auth-context.js';
import { distributeLead } from '../domain/automation/distribution.js';
import type { Action } from '../domain/automation/rules.types.js';
import { recordEvent } from '../events/outbox.js';
import { recordLeadChange } from '../domain/leads/lead-events.js';
import { changedLeadFields } from '../domain/leads/lead-fields.js';
import { attachTag, detachTag, lockLead, updateLead } from '../domain/leads/leads.repo.js';
import { insertNote } from '../domain/notes/notes.repo.js';
import { presentNote } from '../domain/notes/notes.service.js';
import { findStatus } from '../domain/statuses/statuses.repo.js';
import { ensureTag, findTag } from '../domain/tags/tags.repo.js';
import { findUser } from '../domain/users/users.repo.js';

/** Sends a reply to the lead's channel as an employee's answer would go (messaging's send). */
export type ReplySender = (auth: AuthContext, leadId: number, input: { message: { text: string }; customId: string }) => Promise<unknown>;

/**
 * One database action of a rule on a lead, in the caller's transaction (with the run's progress,
 * so it happens exactly once). Each records the ordinary events of the change it makes.
 */
export async function applyLeadAction(
  trx: Executor,
  action: Exclude<Action, { type: 'reply' }>,
  leadId: number,
  text: string,
  now: number,
) {
  const dialect = dialectOf(trx);
  const lead = await trx.selectFrom('leads').selectAll().where('id', '=', leadId).executeTakeFirst();
  if (!lead) throw new Error('the lead no longer exists');
  await lockLead(trx, dialect, lead.account_id, lead.id);
  const change = async (cols: Partial<LeadRow>) => {
    const after = await updateLead(trx, lead.account_id, lead.id, { ...cols, updated_at: now });
    await recordLeadChange(trx, lead, after, changedLeadFields(lead, after), now);
  };
  switch (action.type) {
    case 'assign': {
      const user = await findUser(trx, lead.account_id, action.userId);
      if (!user?.confirmed) throw new Error('the employee is no longer a confirmed employee');
      if (lead.user_id !== user.id) await change({ user_id: user.id });
      return;
    }
    case 'distribute':
      await distributeLead(trx, lead, now, action.mode);
      return;
    case 'setStatus': {
      const status = await findStatus(trx, lead.account_id, action.statusId);
      if (!status) throw new Error('the status no longer exists');
      if (lead.status_id !== status.id) await change({ status_id: status.id, status_type: status.type });
      return;
    }
    case 'addTag': {
      const tag = await ensureTag(trx, lead.account_id, action.tag, now);
      if (await attachTag(trx, lead.account_id, lead.id, tag.id, now)) {
        const after = await updateLead(trx, lead.account_id, lead.id, { updated_at: now });
        await recordLeadChange(trx, lead, after, ['tags'], now);
      }
      return;
    }
    case 'removeTag': {
      const tag = await findTag(trx, lead.account_id, action.tag);
      if (tag && (await detachTag(trx, lead.id, tag.id))) {
        const after = await updateLead(trx, lead.account_id, lead.id, { updated_at: now });
        await recordLeadChange(trx, lead, after, ['tags'], now);
      }
      return;
    }
    case 'note': {
      const note = await insertNote(trx, { accountId: lead.account_id, leadId: lead.id, userId: null, text, mentions: [], now });
      await recordEvent(
        trx,
        { accountId: lead.account_id, leadId: lead.id, type: 'lead.note.created', payload: { leadId: lead.id, note: presentNote(note) } },
        now,
      );
      return;
    }
  }
}
