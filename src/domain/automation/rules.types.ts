import isSafeRegex from 'safe-regex2';
import type { ErrorDetail } from '../errors.js';
import { DISTRIBUTION_MODES } from './distribution.js';

export const RULE_EVENTS = ['message.incoming', 'lead.created', 'lead.changed.status', 'lead.idle'] as const;
export type RuleEvent = (typeof RULE_EVENTS)[number];

export const MAX_RULES = 100;
export const MAX_PATTERN = 200;
const MAX_TEXT = 4096;
const MAX_LIST = 100;

export type Condition =
  | { field: 'message.text'; op: 'contains' | 'matches'; value: string }
  | { field: 'integration.id' | 'lead.statusId'; op: 'in'; value: Array<number | null> }
  | { field: 'integration.type'; op: 'in'; value: string[] }
  | { field: 'lead.tags'; op: 'includes'; value: string }
  | { field: 'customer.isNew' | 'time.workingHours'; op: 'is'; value: boolean };

export type Action =
  | { type: 'assign'; userId: number }
  | { type: 'distribute'; mode: 'round_robin' | 'least_busy' }
  | { type: 'setStatus'; statusId: number }
  | { type: 'addTag' | 'removeTag'; tag: string }
  | { type: 'reply' | 'note'; text: string };

export interface RuleInput {
  name: string;
  enabled?: boolean;
  event: string;
  idleMinutes?: number;
  conditions?: unknown[];
  actions: unknown[];
  order?: number;
}

/** Each field's operator and the check of its value. */
const FIELDS: Record<string, { op: string[]; value: (v: unknown) => string | undefined }> = {
  'message.text': { op: ['contains', 'matches'], value: (v) => (isText(v) ? undefined : 'must be a non-empty string') },
  'integration.id': { op: ['in'], value: (v) => idList(v, false) },
  'integration.type': { op: ['in'], value: (v) => (isList(v) && v.every(isText) ? undefined : 'must be an array of strings') },
  'lead.statusId': { op: ['in'], value: (v) => idList(v, true) },
  'lead.tags': { op: ['includes'], value: (v) => (isText(v) ? undefined : 'must be a non-empty string') },
  'customer.isNew': { op: ['is'], value: (v) => (typeof v === 'boolean' ? undefined : 'must be a boolean') },
  'time.workingHours': { op: ['is'], value: (v) => (typeof v === 'boolean' ? undefined : 'must be a boolean') },
};

const ACTIONS: Record<string, { key: string; check: (v: unknown) => string | undefined }> = {
  assign: { key: 'userId', check: (v) => (isId(v) ? undefined : 'must be an employee id') },
  distribute: {
    key: 'mode',
    check: (v) => (DISTRIBUTION_MODES.includes(v as never) && v !== 'off' ? undefined : 'must be round_robin or least_busy'),
  },
  setStatus: { key: 'statusId', check: (v) => (isId(v) ? undefined : 'must be a status id') },
  addTag: { key: 'tag', check: (v) => (isText(v) && v.trim().length <= 100 ? undefined : 'must be a tag of 1 to 100 characters') },
  removeTag: { key: 'tag', check: (v) => (isText(v) && v.trim().length <= 100 ? undefined : 'must be a tag of 1 to 100 characters') },
  reply: { key: 'text', check: (v) => (isText(v) && v.length <= MAX_TEXT ? undefined : `must be a text of 1 to ${MAX_TEXT} characters`) },
  note: { key: 'text', check: (v) => (isText(v) && v.length <= MAX_TEXT ? undefined : `must be a text of 1 to ${MAX_TEXT} characters`) },
};

function isText(v: unknown): v is string {
  return typeof v === 'string' && v.trim().length > 0 && !v.includes('\0');
}
function isId(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}
function isList(v: unknown): v is unknown[] {
  return Array.isArray(v) && v.length > 0 && v.length <= MAX_LIST;
}
function idList(v: unknown, nullable: boolean): string | undefined {
  return isList(v) && v.every((x) => isId(x) || (nullable && x === null))
    ? undefined
    : `must be an array of ids${nullable ? ' (null: the inbox)' : ''}`;
}

/**
 * The problems of a rule's event, conditions and actions that need no database (paths as the API
 * reports them); the references to statuses and employees are checked by the service.
 */
export function ruleProblems(input: RuleInput): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  if (!RULE_EVENTS.includes(input.event as RuleEvent))
    out.push({ path: 'body.event', message: `must be one of ${RULE_EVENTS.join(', ')}` });
  if (input.event === 'lead.idle' && input.idleMinutes === undefined)
    out.push({ path: 'body.idleMinutes', message: 'is required for lead.idle' });
  for (const [i, raw] of (input.conditions ?? []).entries()) {
    const at = `body.conditions.${i}`;
    const c = (raw ?? {}) as Record<string, unknown>;
    const spec = FIELDS[String(c.field)];
    if (!spec) {
      out.push({ path: `${at}.field`, message: `must be one of ${Object.keys(FIELDS).join(', ')}` });
      continue;
    }
    if (!spec.op.includes(String(c.op))) {
      out.push({ path: `${at}.op`, message: `must be ${spec.op.join(' or ')} for ${String(c.field)}` });
      continue;
    }
    const problem = spec.value(c.value);
    if (problem) {
      out.push({ path: `${at}.value`, message: problem });
      continue;
    }
    if (c.op === 'matches') {
      const pattern = c.value as string;
      if (pattern.length > MAX_PATTERN) {
        out.push({ path: `${at}.value`, message: `must be at most ${MAX_PATTERN} characters` });
        continue;
      }
      try {
        new RegExp(pattern, 'iu');
      } catch {
        out.push({ path: `${at}.value`, message: 'is not a valid regular expression' });
        continue;
      }
      // Nested repetition can take exponential time on a crafted message: refused outright.
      if (!isSafeRegex(pattern)) out.push({ path: `${at}.value`, message: 'may backtrack catastrophically (nested repetition)' });
    }
  }
  for (const [i, raw] of input.actions.entries()) {
    const at = `body.actions.${i}`;
    const a = (raw ?? {}) as Record<string, unknown>;
    const spec = ACTIONS[String(a.type)];
    if (!spec) {
      out.push({ path: `${at}.type`, message: `must be one of ${Object.keys(ACTIONS).join(', ')}` });
      continue;
    }
    const problem = spec.check(a[spec.key]);
    if (problem) out.push({ path: `${at}.${spec.key}`, message: problem });
  }
  return out;
}

/** The stored condition or action: only its known keys. */
export function cleanCondition(raw: unknown): Condition {
  const c = raw as Condition;
  return { field: c.field, op: c.op, value: c.value } as Condition;
}
export function cleanAction(raw: unknown): Action {
  const a = raw as Record<string, unknown>;
  const key = ACTIONS[String(a.type)].key;
  return { type: a.type, [key]: typeof a[key] === 'string' && key === 'tag' ? (a[key] as string).trim() : a[key] } as unknown as Action;
}
