import { sql } from 'kysely';
import { dialectOf, type Executor } from '../db/database.js';
import { numberLiteral } from '../db/pg-arrays.js';
import { prepared } from '../db/prepared.js';
import type { EventRow, LeadRow } from '../db/schema.js';
import { ALWAYS_OPEN, type WorkingHours } from '../domain/automation/working-hours.js';
import { tagsOfLeads } from '../domain/leads/leads.repo.js';
import type { RuleContext } from './rule-conditions.js';
import { firstLeadOfCustomers } from './rule-runs.repo.js';

interface EventPayload {
  isNewCustomer?: boolean;
  message?: { message?: { text?: string } };
}

/** A lead as rules read it: the row, its tags, its integration's type and its customer's name. */
export interface LeadFacts {
  lead: LeadRow;
  tags: string[];
  integrationType: string;
  customerName: string;
}

/** What rules read of an event apart from its lead, which changes as rules act on it. */
export type EventFacts = Omit<RuleContext, 'lead' | 'tags' | 'integrationType' | 'customerName'>;

/** The accounts' working hours (open around the clock for an account that set none), in one statement. */
export async function workingHoursOf(db: Executor, accountIds: number[]): Promise<Map<number, WorkingHours>> {
  const hours = new Map<number, WorkingHours>();
  if (!accountIds.length) return hours;
  const rows = await db
    .selectFrom('account_automation')
    .select(['account_id', 'working_hours'])
    .where('account_id', 'in', accountIds)
    .execute();
  for (const r of rows) if (r.working_hours) hours.set(r.account_id, JSON.parse(r.working_hours) as WorkingHours);
  return hours;
}

/**
 * The leads with what rules read of them: the leads (locked for the transaction with `lock` on
 * PostgreSQL, in id order as every other locker of several leads) with their integration's type,
 * their customer's name and their tags. One statement on PostgreSQL, each lead's tags gathered
 * there (a round trip and a row per tag fewer, a chunk's leads having about ten tags each in the
 * `automation` scenario); two on SQLite. A lead deleted is missing.
 *
 * PostgreSQL: a lead's tag ids come from `lead_tags`' key first, then their names in one look-up
 * of `tags` by those ids. Joined row by row, an account's few tags were planned as a scan of
 * `tags` per tag of the lead (ten scans per lead read here; docs/performance.md, "Automation's
 * batches"). The names come as a JSON array, which pg hands to JSON.parse: a text array is
 * parsed character by character in JavaScript.
 */
export async function readLeads(db: Executor, leadIds: number[], lock: boolean): Promise<Map<number, LeadFacts>> {
  const out = new Map<number, LeadFacts>();
  if (!leadIds.length) return out;
  const postgres = dialectOf(db) === 'postgres';
  const rows = postgres
    ? await (lock ? lockedLeads : unlockedLeads)(db, { ids: numberLiteral(leadIds) })
    : await leadsQuery(db, leadIds, lock).execute();
  const tags = postgres
    ? undefined
    : await tagsOfLeads(
        db,
        rows.map((r) => r.id),
      );
  for (const { integration_type, customer_name, tag_names, ...lead } of rows) {
    out.set(lead.id, {
      lead,
      tags: (tags ? tags.get(lead.id) : tag_names) ?? [],
      integrationType: integration_type,
      customerName: customer_name ?? '',
    });
  }
  return out;
}

/**
 * readLeads' statement (its tags gathered there on PostgreSQL only). PostgreSQL: the ids as one
 * array (`leadIds` or its literal), so that the text is the same for any number of leads: built
 * once and run as a named statement, parsed once per connection (db/prepared.ts).
 */
export function leadsQuery(db: Executor, leadIds: readonly number[] | string, lock: boolean) {
  const postgres = dialectOf(db) === 'postgres';
  const query = db
    .selectFrom('leads as l')
    .innerJoin('integrations as i', 'i.id', 'l.integration_id')
    .innerJoin('customers as c', 'c.id', 'l.customer_id')
    .selectAll('l')
    .select(['i.type as integration_type', 'c.name as customer_name'])
    .select(
      postgres
        ? sql<
            string[] | null
          >`(select json_agg(t.tag) from tags t where t.id = any(array(select lt.tag_id from lead_tags lt where lt.lead_id = l.id)))`.as(
            'tag_names',
          )
        : sql<null>`null`.as('tag_names'),
    )
    .where(
      postgres || typeof leadIds === 'string'
        ? sql<boolean>`l.id = any(cast(${leadIds} as bigint[]))`
        : sql<boolean>`l.id in (${sql.join([...leadIds])})`,
    )
    .orderBy('l.id');
  return lock && postgres ? query.forUpdate('l') : query;
}

/** PostgreSQL's lead reads (readLeads), `ids` an array literal (db/pg-arrays.ts). */
const unlockedLeads = prepared((db, p: { ids: string }) => leadsQuery(db, p.ids, false));
const lockedLeads = prepared((db, p: { ids: string }) => leadsQuery(db, p.ids, true));

/**
 * What rules read of each event whose lead is in `leads`: the message's text, the time and its
 * account's working hours, and whether the customer is new (said by the event, or else whether the
 * lead is the customer's first: one statement for the events that do not say).
 */
export async function eventFacts(
  db: Executor,
  events: EventRow[],
  leads: Map<number, LeadFacts>,
  hours: Map<number, WorkingHours>,
): Promise<Map<number, EventFacts>> {
  const payloads = new Map(events.map((e) => [e.id, (e.payload ? JSON.parse(e.payload) : {}) as EventPayload]));
  const leadOf = (e: EventRow) => (e.lead_id === null ? undefined : leads.get(e.lead_id)?.lead);
  const unsaid = events.flatMap((e) => {
    const lead = leadOf(e);
    return lead && typeof payloads.get(e.id)?.isNewCustomer !== 'boolean' ? [lead.customer_id] : [];
  });
  const firstLeads = await firstLeadOfCustomers(db, [...new Set(unsaid)]);
  const facts = new Map<number, EventFacts>();
  for (const event of events) {
    const lead = leadOf(event);
    if (!lead) continue;
    const payload = payloads.get(event.id) ?? {};
    facts.set(event.id, {
      text: event.type === 'message.incoming' ? (payload.message?.message?.text ?? '') : undefined,
      customerIsNew:
        typeof payload.isNewCustomer === 'boolean' ? payload.isNewCustomer : (firstLeads.get(lead.customer_id) ?? lead.id) >= lead.id,
      at: event.created_at,
      hours: hours.get(lead.account_id) ?? ALWAYS_OPEN,
    });
  }
  return facts;
}
