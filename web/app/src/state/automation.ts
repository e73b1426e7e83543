import type { ErrorDetail } from '../api/client';

/**
 * What the Settings -> Automation pages edit (docs/api/automation.md): rules as the app builds them,
 * the presets it recognizes among the account's rules, and the working-hours week.
 */

export const RULE_EVENTS = ['message.incoming', 'lead.created', 'lead.changed.status', 'lead.idle'] as const;
export type RuleEvent = (typeof RULE_EVENTS)[number];

/** Each condition field with its one or two operators, as the API takes them. */
export const CONDITION_FIELDS = {
  'message.text': ['contains', 'matches'],
  'integration.id': ['in'],
  'integration.type': ['in'],
  'lead.statusId': ['in'],
  'lead.tags': ['includes'],
  'customer.isNew': ['is'],
  'time.workingHours': ['is'],
} as const;
export type ConditionField = keyof typeof CONDITION_FIELDS;
export const FIELDS = Object.keys(CONDITION_FIELDS) as ConditionField[];

export interface Condition {
  field: ConditionField;
  op: string;
  value: unknown;
}

export type Action =
  | { type: 'assign'; userId: number }
  | { type: 'distribute'; mode: 'round_robin' | 'least_busy' }
  | { type: 'setStatus'; statusId: number }
  | { type: 'addTag' | 'removeTag'; tag: string }
  | { type: 'reply' | 'note'; text: string };
export type ActionType = Action['type'];
export const ACTION_TYPES: ActionType[] = ['assign', 'distribute', 'setStatus', 'addTag', 'removeTag', 'reply', 'note'];

export interface RuleBody {
  name: string;
  enabled: boolean;
  event: RuleEvent;
  idleMinutes?: number;
  conditions: Condition[];
  actions: Action[];
  order?: number;
}
export interface Rule extends RuleBody {
  id: number;
  order: number;
}

/** A new condition of a field: its first operator and an empty value of the right type. */
export function newCondition(field: ConditionField): Condition {
  const op = CONDITION_FIELDS[field][0];
  if (field === 'customer.isNew' || field === 'time.workingHours') return { field, op, value: true };
  if (field === 'integration.id' || field === 'integration.type' || field === 'lead.statusId') return { field, op, value: [] };
  return { field, op, value: '' };
}

/** A new action of a type, its parameter filled with the first choice the account has. */
export function newAction(type: ActionType, first: { userId?: number; statusId?: number }): Action {
  switch (type) {
    case 'assign':
      return { type, userId: first.userId ?? 0 };
    case 'distribute':
      return { type, mode: 'round_robin' };
    case 'setStatus':
      return { type, statusId: first.statusId ?? 0 };
    case 'addTag':
    case 'removeTag':
      return { type, tag: '' };
    default:
      return { type, text: '' };
  }
}

/** The body PUT /automation/rules/<id> takes for a stored rule, with changes. */
export function ruleBody(rule: Rule, patch: Partial<RuleBody> = {}): RuleBody {
  const { id: _id, ...body } = { ...rule, ...patch };
  if (body.event !== 'lead.idle') delete body.idleMinutes;
  return body;
}

/** The rules in the order they run (then by id, as the server lists equal orders). */
export function sortRules(rules: Rule[]): Rule[] {
  return [...rules].sort((a, b) => a.order - b.order || a.id - b.id);
}

/** Moves a rule one place and numbers the list again: the rules whose `order` changes, with it. */
export function moveRule(rules: Rule[], id: number, by: -1 | 1): Array<{ rule: Rule; order: number }> {
  const list = sortRules(rules);
  const from = list.findIndex((r) => r.id === id);
  const to = from + by;
  if (from < 0 || to < 0 || to >= list.length) return [];
  const [moved] = list.splice(from, 1);
  list.splice(to, 0, moved);
  return list.flatMap((rule, order) => (rule.order === order ? [] : [{ rule, order }]));
}

/** The messages a 400 names for one part of the body (`body.conditions.1` and anything under it). */
export function errorsAt(details: ErrorDetail[], path: string): string[] {
  return details.filter((d) => d.path === path || d.path.startsWith(`${path}.`)).map((d) => d.message);
}

// Presets: ordinary rules the app creates and recognizes by their shape, whatever their name and
// language (the owner may rename them or edit the text): the condition or event that makes them
// what they are, and the action they exist for.
export type PresetKind = 'away' | 'greeting' | 'autoClose';
export const PRESETS: PresetKind[] = ['away', 'greeting', 'autoClose'];

const has = (rule: RuleBody, field: ConditionField, value: unknown) =>
  rule.conditions.some((c) => c.field === field && c.op === 'is' && c.value === value);
const replies = (rule: RuleBody) => rule.actions.some((a) => a.type === 'reply');

/** Which preset a rule is, if any. `completed`: the ids of the account's completed statuses. */
export function presetOf(rule: RuleBody, completed: ReadonlySet<number>): PresetKind | null {
  if (rule.event === 'message.incoming' && has(rule, 'time.workingHours', false) && replies(rule)) return 'away';
  if (replies(rule) && (rule.event === 'lead.created' || (rule.event === 'message.incoming' && has(rule, 'customer.isNew', true))))
    return 'greeting';
  if (rule.event === 'lead.idle' && rule.actions.some((a) => a.type === 'setStatus' && completed.has(a.statusId))) return 'autoClose';
  return null;
}

/** The first of the account's rules that is the preset. */
export function findPreset(rules: Rule[], kind: PresetKind, completed: ReadonlySet<number>): Rule | undefined {
  return sortRules(rules).find((r) => presetOf(r, completed) === kind);
}

/** What a preset's switch sets: `text` for the replies, `days` and `statusId` for auto-close. */
export interface PresetSettings {
  name: string;
  text: string;
  days: number;
  statusId: number;
}

/** The rule a preset's switch creates, or the preset's rule with the settings shown applied. */
export function presetRule(kind: PresetKind, s: PresetSettings, existing?: Rule): RuleBody {
  if (existing) {
    const actions = existing.actions.map((a): Action => {
      if (kind !== 'autoClose' && a.type === 'reply') return { ...a, text: s.text };
      if (kind === 'autoClose' && a.type === 'setStatus') return { ...a, statusId: s.statusId };
      return a;
    });
    return ruleBody(existing, {
      enabled: true,
      actions,
      ...(kind === 'autoClose' ? { idleMinutes: s.days * 24 * 60 } : {}),
    });
  }
  if (kind === 'away')
    return {
      name: s.name,
      enabled: true,
      event: 'message.incoming',
      conditions: [{ field: 'time.workingHours', op: 'is', value: false }],
      actions: [{ type: 'reply', text: s.text }],
    };
  if (kind === 'greeting')
    return {
      name: s.name,
      enabled: true,
      event: 'message.incoming',
      conditions: [{ field: 'customer.isNew', op: 'is', value: true }],
      actions: [{ type: 'reply', text: s.text }],
    };
  return {
    name: s.name,
    enabled: true,
    event: 'lead.idle',
    idleMinutes: s.days * 24 * 60,
    conditions: [],
    actions: [{ type: 'setStatus', statusId: s.statusId }],
  };
}

// Working hours.
export const WEEK_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type WeekDay = (typeof WEEK_DAYS)[number];
export interface WorkingHours {
  timezone: string;
  week: Partial<Record<WeekDay, Array<[string, string]>>>;
  holidays?: string[];
}

/** Whether the account never set working hours: the server then answers open around the clock in UTC. */
export function isUnset(hours: WorkingHours): boolean {
  return (
    hours.timezone === 'UTC' &&
    !hours.holidays?.length &&
    WEEK_DAYS.every((d) => hours.week[d]?.length === 1 && hours.week[d]?.[0][0] === '00:00' && hours.week[d]?.[0][1] === '24:00')
  );
}

/**
 * A time field cannot show 24:00, so the end of a day is 00:00 in the form and 24:00 to the API (a
 * range ending at 00:00 would end before it starts).
 */
export const toApiEnd = (end: string) => (end === '00:00' ? '24:00' : end);
export const toFormEnd = (end: string) => (end === '24:00' ? '00:00' : end);

/** The IANA time zones the browser knows, the given one first among them if it is missing. */
export function timeZones(current: string): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  const all = intl.supportedValuesOf?.('timeZone') ?? [];
  const list = all.includes('UTC') ? all : ['UTC', ...all];
  return list.includes(current) ? list : [current, ...list];
}

export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}
