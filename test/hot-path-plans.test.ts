import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

// The hot path's statements are named on PostgreSQL and may keep a generic plan made while the
// tables were empty (a new install; autovacuum off). Such a plan must still use the index that
// answers the statement (docs/performance.md, issue 19): with a plain (integration_id, id) index on
// messages, the redelivery check read every message of the integration through it instead.
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

const CASES = [
  { text: 'select * from messages where integration_id = $1 and external_id = $2', types: 'bigint, text', index: 'messages_external_uq' },
  {
    text: 'select * from leads where customer_id = $1 and integration_id = $2 order by id desc limit 1',
    types: 'bigint, bigint',
    index: 'leads_customer_idx',
  },
];

describe('plans of hot-path statements on empty tables', () => {
  it('use the index that answers each statement, also as a generic plan', async () => {
    await t.db.kysely.connection().execute(async (conn) => {
      for (const [i, c] of CASES.entries()) {
        let plan: string;
        if (DIALECT === 'postgres') {
          await sql.raw('set plan_cache_mode = force_generic_plan').execute(conn);
          await sql.raw(`prepare hot_${i}(${c.types}) as ${c.text}`).execute(conn);
          const { rows } = await sql
            .raw<Record<string, unknown>>(`explain (format json) execute hot_${i}(1, ${c.types.endsWith('text') ? "'x'" : '2'})`)
            .execute(conn);
          plan = JSON.stringify(rows);
        } else {
          const { rows } = await sql.raw<Record<string, unknown>>(`explain query plan ${c.text.replace(/\$\d/g, '1')}`).execute(conn);
          plan = JSON.stringify(rows);
        }
        expect(plan, c.text).toContain(c.index);
      }
      if (DIALECT === 'postgres') await sql.raw('reset plan_cache_mode').execute(conn);
    });
  });
});
