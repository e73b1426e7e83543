import type { AutomationRuleRow, EventRow } from '../db/schema.js';
import type { Executor } from '../db/database.js';
import type { Action } from '../domain/automation/rules.types.js';
import type { WorkingHours } from '../domain/automation/working-hours.js';
import { ruleMatches, type RuleContext } from './rule-conditions.js';
import { eventFacts, readLeads, type EventFacts, type LeadFacts } from './rule-context.js';

// What a batch's runs read of a chunk of events: the leads and the events' facts, each event's
// matching rules as read, and the rules' actions (RuleRunner takes the runs and acts on them).

/** An action's outcome as a run records it. */
export interface ActionResult {
  type: string;
  ok: boolean;
  error?: string;
}

/** Actions parsed once per rule row read (a batch runs each rule for many events). */
const parsedActions = new WeakMap<AutomationRuleRow, Action[]>();

export function actionsOf(rule: AutomationRuleRow): Action[] {
  let actions = parsedActions.get(rule);
  if (!actions) {
    actions = JSON.parse(rule.actions) as Action[];
    parsedActions.set(rule, actions);
  }
  return actions;
}

/**
 * The results of a run whose every action adds a tag the lead has (read under the lock): it
 * changes nothing, so it is taken done with them, in the claim's insert.
 */
export function foreseen(rule: AutomationRuleRow, tags: string[]): ActionResult[] | undefined {
  const actions = actionsOf(rule);
  if (!actions.length || !actions.every((a) => a.type === 'addTag' && tags.includes(a.tag))) return undefined;
  return actions.map((a) => ({ type: a.type, ok: true }));
}

/** A chunk's leads as read, what rules read of its events, and each event's matching rules as read. */
export interface SeenChunk {
  read: Map<number, LeadFacts>;
  plans: Array<{ event: EventRow; rules: AutomationRuleRow[]; known: EventFacts; lead: LeadFacts; matching: AutomationRuleRow[] }>;
}

/** Reads the chunk's leads (`lock`: locked on PostgreSQL), or takes them `read` already, and matches each event's rules. */
export async function seeChunk(
  db: Executor,
  chunk: Array<{ event: EventRow; rules: AutomationRuleRow[] }>,
  hours: Map<number, WorkingHours>,
  lock: boolean,
  known?: Map<number, LeadFacts>,
): Promise<SeenChunk> {
  const events = chunk.map((c) => c.event);
  const read = known ?? (await readLeads(db, [...new Set(events.flatMap((e) => (e.lead_id === null ? [] : [e.lead_id])))], lock));
  const facts = await eventFacts(db, events, read, hours);
  const plans = chunk.flatMap(({ event, rules }) => {
    const known = facts.get(event.id);
    const lead = event.lead_id === null ? undefined : read.get(event.lead_id);
    if (!known || !lead) return [];
    const ctx = contextOf(known, lead);
    return [{ event, rules, known, lead, matching: rules.filter((rule) => ruleMatches(rule, ctx)) }];
  });
  return { read, plans };
}

export function contextOf(facts: EventFacts, lead: LeadFacts): RuleContext {
  return {
    text: facts.text,
    customerIsNew: facts.customerIsNew,
    at: facts.at,
    hours: facts.hours,
    lead: lead.lead,
    tags: lead.tags,
    integrationType: lead.integrationType,
    customerName: lead.customerName,
  };
}

export function errorText(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).slice(0, 500);
}
