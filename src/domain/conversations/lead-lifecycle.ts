import type { LeadRow } from '../../db/schema.js';

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
  'unread_count' | 'last_message_id' | 'last_message_at' | 'last_message_incoming' | 'awaiting_since' | 'response_time'
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
  };
}

/**
 * After an outgoing message: `responseTime` is the time from the first unanswered incoming message
 * to this answer; an answer with nothing awaiting keeps the previous figure.
 */
export function afterOutgoing(lead: MessageFields, messageId: number, at: number): MessageFields {
  const isLatest = at >= lead.last_message_at || lead.last_message_id === null;
  return {
    unread_count: lead.unread_count,
    last_message_id: isLatest ? messageId : lead.last_message_id,
    last_message_at: isLatest ? at : lead.last_message_at,
    last_message_incoming: isLatest ? 0 : lead.last_message_incoming,
    awaiting_since: null,
    response_time: lead.awaiting_since === null ? lead.response_time : Math.max(0, at - lead.awaiting_since),
  };
}
