import type { LeadRow } from '../../db/schema.js';
import { AUTOMATION_CUSTOM_ID } from './history-message.js';

/**
 * docs/api/leads.md: an incoming message joins the customer's latest lead on the integration when
 * that lead is open (inbox or an active status) or in an `ignore` status; otherwise (none, or
 * archived as completed/failed) a new inbox lead is created.
 */
export function joinsLatestLead(latest: Pick<LeadRow, 'status_type'> | undefined): boolean {
  if (!latest) return false;
  return latest.status_type === 'inbox' || latest.status_type === 'active' || latest.status_type === 'ignore';
}

type MessageFields = Pick<
  LeadRow,
  'unread_count' | 'last_message_id' | 'last_message_at' | 'last_message_incoming' | 'awaiting_since' | 'response_time' | 'responded_at'
>;

/**
 * The lead's message-fed fields after an incoming message: one more unread, the message is the
 * last one unless an older message arrived late, the wait for an answer starts at the first
 * unanswered message, and `responseTime` is null while the customer has the last word.
 */
export function afterIncoming(lead: MessageFields, messageId: number, at: number): MessageFields {
  const isLatest = at >= lead.last_message_at || lead.last_message_id === null;
  return {
    unread_count: lead.unread_count + 1,
    last_message_id: isLatest ? messageId : lead.last_message_id,
    last_message_at: isLatest ? at : lead.last_message_at,
    last_message_incoming: isLatest ? 1 : lead.last_message_incoming,
    awaiting_since: lead.awaiting_since === null ? at : Math.min(lead.awaiting_since, at),
    response_time: isLatest ? null : lead.response_time,
    responded_at: lead.responded_at,
  };
}

/**
 * After an outgoing message: `responseTime` is the time from the first unanswered incoming message
 * to this answer; an answer with nothing awaiting keeps the previous figure. An automation rule's
 * reply (`byAutomation`) is the last message but no answer: the customer still waits for a person
 * (docs/api/automation.md "First-response target").
 */
export function afterOutgoing(lead: MessageFields, messageId: number, at: number, byAutomation = false): MessageFields {
  const isLatest = at >= lead.last_message_at || lead.last_message_id === null;
  const answers = !byAutomation && lead.awaiting_since !== null;
  return {
    unread_count: lead.unread_count,
    last_message_id: isLatest ? messageId : lead.last_message_id,
    last_message_at: isLatest ? at : lead.last_message_at,
    last_message_incoming: isLatest ? 0 : lead.last_message_incoming,
    awaiting_since: byAutomation ? lead.awaiting_since : null,
    response_time: answers ? Math.max(0, at - (lead.awaiting_since as number)) : lead.response_time,
    responded_at: answers ? at : lead.responded_at,
  };
}

/**
 * Whether an outgoing message is an automation rule's reply: sent by no employee, its customId
 * marked (history-message.ts `sender.automation`).
 */
export const isAutomationReply = (userId: number | null, customId: string | null | undefined): boolean =>
  userId === null && (customId?.startsWith(AUTOMATION_CUSTOM_ID) ?? false);
