import type { Updateable } from 'kysely';
import type { LeadRow, LeadsTable } from '../../db/schema.js';
import { invalid, type ErrorDetail } from '../errors.js';
import { presentLead } from './lead-presenter.js';
import type { CustomFieldValue, LeadFieldsInput } from './leads.types.js';

/**
 * The editable fields of a lead: checks that do not need the database, and the column values
 * they become. `customFields` and `items` are stored as JSON text; `customFields` is answered as
 * that text (docs/api/resources.md: a string when read, an object when written).
 */

export const FIELD_LIMITS = {
  details: 10_000,
  address: 1_000,
  ttn: 255,
  customData: 65_536,
  customFieldKeys: 100,
  customFieldKey: 100,
  customFieldText: 10_000,
  customFieldTitle: 200,
  items: 500,
  itemTitle: 1_000,
} as const;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is string | number => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));

/** Every problem of a `customFields` object; empty when it is valid. */
export function customFieldsProblems(value: unknown, path = 'body.customFields'): ErrorDetail[] {
  if (!isPlainObject(value)) return [{ path, message: 'must be an object' }];
  const keys = Object.keys(value);
  const out: ErrorDetail[] = [];
  if (keys.length > FIELD_LIMITS.customFieldKeys) out.push({ path, message: `must have at most ${FIELD_LIMITS.customFieldKeys} fields` });
  for (const key of keys) {
    const at = `${path}.${key}`;
    const v = value[key];
    if (key.length > FIELD_LIMITS.customFieldKey)
      out.push({ path: at, message: `key must be at most ${FIELD_LIMITS.customFieldKey} characters` });
    if (isScalar(v)) {
      if (typeof v === 'string' && v.length > FIELD_LIMITS.customFieldText) out.push({ path: at, message: 'is too long' });
      continue;
    }
    if (isPlainObject(v) && isScalar(v.value) && typeof v.title === 'string') {
      if (typeof v.value === 'string' && v.value.length > FIELD_LIMITS.customFieldText)
        out.push({ path: `${at}.value`, message: 'is too long' });
      if (v.title.length > FIELD_LIMITS.customFieldTitle) out.push({ path: `${at}.title`, message: 'is too long' });
      continue;
    }
    out.push({ path: at, message: 'must be a string, a number, or {value: string|number, title: string}' });
  }
  return out;
}

/** Every problem of an `items` array; empty when it is valid. */
export function itemsProblems(value: unknown, path = 'body.items'): ErrorDetail[] {
  if (!Array.isArray(value)) return [{ path, message: 'must be an array' }];
  if (value.length > FIELD_LIMITS.items) return [{ path, message: `must have at most ${FIELD_LIMITS.items} items` }];
  const out: ErrorDetail[] = [];
  value.forEach((item, i) => {
    const at = `${path}.${i}`;
    if (!isPlainObject(item)) {
      out.push({ path: at, message: 'must be an object' });
      return;
    }
    if (typeof item.title !== 'string') out.push({ path: `${at}.title`, message: 'is required (string)' });
    else if (item.title.length > FIELD_LIMITS.itemTitle) out.push({ path: `${at}.title`, message: 'is too long' });
    if (typeof item.count !== 'number' || !Number.isSafeInteger(item.count))
      out.push({ path: `${at}.count`, message: 'is required (integer)' });
  });
  return out;
}

/**
 * The column values of the given fields, after the checks that need no database. Absent fields
 * are left out; references (status, employee, payment type) are checked by the service.
 */
export function leadFieldColumns(input: LeadFieldsInput): Updateable<LeadsTable> {
  const details: ErrorDetail[] = [];
  const cols: Updateable<LeadsTable> = {};
  const text = (name: 'details' | 'address' | 'ttn' | 'customData', column: 'details' | 'address' | 'ttn' | 'custom_data') => {
    const v = input[name];
    if (v === undefined) return;
    if (typeof v !== 'string') details.push({ path: `body.${name}`, message: 'must be a string' });
    else if (v.length > FIELD_LIMITS[name])
      details.push({ path: `body.${name}`, message: `must be at most ${FIELD_LIMITS[name]} characters` });
    else cols[column] = v;
  };
  text('details', 'details');
  text('address', 'address');
  text('ttn', 'ttn');
  text('customData', 'custom_data');
  if (input.amount !== undefined) {
    if (!Number.isSafeInteger(input.amount)) details.push({ path: 'body.amount', message: 'must be an integer' });
    else cols.amount = input.amount;
  }
  if (input.customFields !== undefined) {
    const problems = customFieldsProblems(input.customFields);
    if (problems.length) details.push(...problems);
    else cols.custom_fields = JSON.stringify(normalizeCustomFields(input.customFields as Record<string, CustomFieldValue>));
  }
  if (input.items !== undefined) {
    const problems = itemsProblems(input.items);
    if (problems.length) details.push(...problems);
    else cols.items = JSON.stringify(input.items);
  }
  if (input.statusId !== undefined) cols.status_id = input.statusId;
  if (input.userId !== undefined) cols.user_id = input.userId;
  if (input.paymentTypeId !== undefined) cols.payment_type_id = input.paymentTypeId;
  if (details.length) throw invalid(`Invalid request: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details);
  return cols;
}

/** `{value, title}` objects keep exactly those two keys. */
function normalizeCustomFields(fields: Record<string, CustomFieldValue>): Record<string, CustomFieldValue> {
  const out: Record<string, CustomFieldValue> = {};
  for (const [key, v] of Object.entries(fields)) out[key] = isScalar(v) ? v : { value: v.value, title: v.title };
  return out;
}

/**
 * Names of the fields of the single-lead shape (also the event's `lead`) that differ between two
 * states of a lead: what `lead.changed` reports as `changes`.
 */
export function changedLeadFields(before: LeadRow, after: LeadRow): string[] {
  const a = presentLead(before) as Record<string, unknown>;
  const b = presentLead(after) as Record<string, unknown>;
  return Object.keys(b).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}
