import type { LeadRow } from '../../db/schema.js';

/** ISO 8601 UTC with milliseconds (docs/api/resources.md). */
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The single-lead shape (GET /leads/<id>, docs/api/resources.md "Lead"), also the `lead` of lead events. List items
 * are built by the leads area from the same row plus its joins.
 */
export function presentLead(lead: LeadRow) {
  return {
    id: lead.id,
    userId: lead.user_id,
    statusId: lead.status_id,
    read: lead.unread_count === 0,
    details: lead.details,
    amount: lead.amount,
    responseTime: lead.response_time,
    customerId: lead.customer_id,
    timestamp: iso(lead.last_message_at),
    address: lead.address,
    ttn: lead.ttn,
    customData: lead.custom_data,
    customFields: lead.custom_fields,
    paymentTypeId: lead.payment_type_id,
    items: JSON.parse(lead.items) as unknown[],
  };
}
