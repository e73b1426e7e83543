import { sql } from 'kysely';

/**
 * PostgreSQL array parameters for batch statements (`unnest(...)`, `= any(...)`): one parameter per
 * column whatever the batch's size, so the statement's text, and its name, stay the same.
 */
export const textArray = (values: (string | null)[]) => sql`${values}::text[]`;
export const bigintArray = (values: (number | null)[]) => sql`${values}::bigint[]`;
export const intArray = (values: (number | null)[]) => sql`${values}::int[]`;
