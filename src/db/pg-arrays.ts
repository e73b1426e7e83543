import { sql } from 'kysely';

/**
 * PostgreSQL array parameters for batch statements (`unnest(...)`, `= any(...)`): one parameter per
 * column whatever the batch's size, so the statement's text, and its name, stay the same. Sent as
 * the array's literal, written here: the text pg would write for a JavaScript array (numbers
 * unquoted), without its per-element conversion and two regular-expression replacements (a text
 * without a quote or backslash needs no escaping).
 */
export const textArray = (values: (string | null)[]) => sql`${textLiteral(values)}::text[]`;
export const bigintArray = (values: (number | null)[]) => sql`${numberLiteral(values)}::bigint[]`;
export const intArray = (values: (number | null)[]) => sql`${numberLiteral(values)}::int[]`;

/** `{1,2,NULL}`: a number array's literal. */
export function numberLiteral(values: readonly (number | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    out += (i ? ',' : '') + (v === null || v === undefined ? 'NULL' : String(v));
  }
  return `${out}}`;
}

/** `{"a","b \"c\"",NULL}`: a text array's literal, each element quoted. */
export function textLiteral(values: readonly (string | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else out += `"${v.includes('\\') || v.includes('"') ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') : v}"`;
  }
  return `${out}}`;
}
