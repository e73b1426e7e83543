import type { Executor } from '../db/database.js';
import type { EventRow, LeadRow } from '../db/schema.js';
import { ALWAYS_OPEN, type WorkingHours } from '../domain/automation/working-hours.js';
import { tagsOfLeads } from '../domain/leads/leads.repo.js';
import type { RuleContext } from './rule-conditions.js';
import { firstLeadOfCustomers } from './rule-runs.repo.js';

interface EventPayload {
  isNewCustomer?: boolean;
  message?: { message?: { text?: string } };
}

/** What rules read of an event apart from the lead, which changes as rules act on it. */
type EventFacts = Omit<RuleContext, 'lead' | 'tags'>;

/** What rules read of a batch of events, loaded in a few statements for the lot. */
export interface BatchContext {
  /** By event id; events whose lead no longer exists are missing. */
  facts: Map<number, EventFacts>;
  /** The leads and their tags as they were when the batch was read, by lead id. */
  leads: Map<number, { lead: LeadRow; tags: string[] }>;
}

/**
 * The context of every event in `events` (each with a lead): the leads with their integration's
 * type and customer's name in one statement, their tags in one, the accounts' working hours in
 * one, and, for events that do not say whether the customer is new, the customers' first leads
 * in one.
 */
export async function loadBatchContext(db: Executor, events: EventRow[]): Promise<BatchContext> {
  const leadIds = [...new Set(events.flatMap((e) => (e.lead_id === null ? [] : [e.lead_id])))];
  const facts = new Map<number, EventFacts>();
  const leads = new Map<number, { lead: LeadRow; tags: string[] }>();
  if (!leadIds.length) return { facts, leads };
  const rows = await db
    .selectFrom('leads as l')
    .innerJoin('integrations as i', 'i.id', 'l.integration_id')
    .innerJoin('customers as c', 'c.id', 'l.customer_id')
    .selectAll('l')
    .select(['i.type as integration_type', 'c.name as customer_name'])
    .where('l.id', 'in', leadIds)
    .execute();
  const found = new Map(rows.map((r) => [r.id, r]));
  const tags = await tagsOfLeads(db, [...found.keys()]);
  const accounts = [...new Set(rows.map((r) => r.account_id))];
  const hours = new Map<number, WorkingHours>();
  if (accounts.length) {
    const settings = await db
      .selectFrom('account_automation')
      .select(['account_id', 'working_hours'])
      .where('account_id', 'in', accounts)
      .execute();
    for (const s of settings) if (s.working_hours) hours.set(s.account_id, JSON.parse(s.working_hours) as WorkingHours);
  }
  const payloads = new Map(events.map((e) => [e.id, (e.payload ? JSON.parse(e.payload) : {}) as EventPayload]));
  const customersOf = events.flatMap((e) => {
    const row = e.lead_id === null ? undefined : found.get(e.lead_id);
    return row && typeof payloads.get(e.id)?.isNewCustomer !== 'boolean' ? [row.customer_id] : [];
  });
  const firstLeads = await firstLeadOfCustomers(db, [...new Set(customersOf)]);
  const joined = new Map<number, { integrationType: string; customerName: string }>();
  for (const row of rows) {
    const { integration_type, customer_name, ...lead } = row;
    leads.set(lead.id, { lead, tags: tags.get(lead.id) ?? [] });
    joined.set(lead.id, { integrationType: integration_type, customerName: customer_name ?? '' });
  }
  for (const event of events) {
    const lead = event.lead_id === null ? undefined : leads.get(event.lead_id)?.lead;
    const more = lead && joined.get(lead.id);
    if (!lead || !more) continue;
    const payload = payloads.get(event.id) ?? {};
    facts.set(event.id, {
      ...more,
      text: event.type === 'message.incoming' ? (payload.message?.message?.text ?? '') : undefined,
      customerIsNew:
        typeof payload.isNewCustomer === 'boolean' ? payload.isNewCustomer : (firstLeads.get(lead.customer_id) ?? lead.id) >= lead.id,
      at: event.created_at,
      hours: hours.get(lead.account_id) ?? ALWAYS_OPEN,
    });
  }
  return { facts, leads };
}
