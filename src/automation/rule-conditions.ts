import type { AutomationRuleRow, LeadRow } from '../db/schema.js';
import type { Condition } from '../domain/automation/rules.types.js';
import { isWorkingTime, type WorkingHours } from '../domain/automation/working-hours.js';

/** What a rule's conditions read of one event. */
export interface RuleContext {
  lead: LeadRow;
  integrationType: string;
  tags: string[];
  /** The incoming message's text; undefined for events without a message. */
  text: string | undefined;
  customerIsNew: boolean;
  customerName: string;
  at: number;
  hours: WorkingHours;
}

const patterns = new Map<string, RegExp>();

/** Patterns were refused at save time when they could backtrack catastrophically (rules.types.ts). */
function pattern(source: string): RegExp {
  let re = patterns.get(source);
  if (!re) {
    re = new RegExp(source, 'iu');
    if (patterns.size > 1000) patterns.clear();
    patterns.set(source, re);
  }
  return re;
}

export function conditionHolds(c: Condition, ctx: RuleContext): boolean {
  switch (c.field) {
    case 'message.text':
      if (ctx.text === undefined) return false;
      return c.op === 'contains' ? ctx.text.toLowerCase().includes(c.value.toLowerCase()) : pattern(c.value).test(ctx.text);
    case 'integration.id':
      return c.value.includes(ctx.lead.integration_id);
    case 'integration.type':
      return c.value.includes(ctx.integrationType);
    case 'lead.statusId':
      return c.value.includes(ctx.lead.status_id);
    case 'lead.tags':
      return ctx.tags.some((t) => t.toLowerCase() === c.value.trim().toLowerCase());
    case 'customer.isNew':
      return ctx.customerIsNew === c.value;
    case 'time.workingHours':
      return isWorkingTime(ctx.hours, ctx.at) === c.value;
  }
}

/** Conditions parsed once per rule row read: a batch tests each rule against every event. */
const parsed = new WeakMap<AutomationRuleRow, Condition[]>();

function conditionsOf(rule: AutomationRuleRow): Condition[] {
  let conditions = parsed.get(rule);
  if (!conditions) {
    conditions = JSON.parse(rule.conditions) as Condition[];
    parsed.set(rule, conditions);
  }
  return conditions;
}

export function ruleMatches(rule: AutomationRuleRow, ctx: RuleContext): boolean {
  return conditionsOf(rule).every((c) => conditionHolds(c, ctx));
}

/** Whether the rule reads its account's working hours (the only condition that does). */
export function readsWorkingHours(rule: AutomationRuleRow): boolean {
  return conditionsOf(rule).some((c) => c.field === 'time.workingHours');
}

/** `{customer.name}` and `{lead.id}` in a reply's or note's text. */
export function fillTemplate(text: string, ctx: RuleContext): string {
  return text.replaceAll('{customer.name}', ctx.customerName).replaceAll('{lead.id}', String(ctx.lead.id));
}
