import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';
import { conversationStates, lockProfiles } from '../src/domain/conversations/conversations.repo.js';

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

  // PostgreSQL only: SQLite ingests through its group commit and has no batch statements.
  if (DIALECT === 'postgres') {
    it('look every sender and conversation of an ingest batch up by index, also as generic plans', async () => {
      // The batch's reads take arrays; a join to them, planned on empty tables, hashed a
      // whole-table scan of messages and sources (docs/performance.md, issue 19 fourth pass).
      await t.db.kysely.connection().execute(async (conn) => {
        // The texts the repository runs, taken from a connection that answers nothing.
        const texts: string[] = [];
        const recorder = new Proxy(conn, {
          get: (target, prop) => {
            if (prop === 'executeQuery') {
              return async (query: { sql: string }) => {
                texts.push(query.sql);
                return { rows: [] };
              };
            }
            const value: unknown = Reflect.get(target, prop, target);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        await lockProfiles(recorder, [1], ['x']);
        const keys = { integrationIds: [1], customerIds: [1], externalIds: ['x'], channelTypes: ['message'], channelIds: ['c'] };
        await expect(conversationStates(recorder, keys)).rejects.toThrow('one row per message');
        const statements = [
          { text: texts[0], types: 'bigint[], text[]', args: "'{1}', '{x}'", indexes: ['profiles_social_uq'] },
          {
            text: texts[1],
            types: 'bigint[], bigint[], text[], text[], text[]',
            args: "'{1}', '{1}', '{x}', '{message}', '{c}'",
            indexes: ['messages_external_uq', 'sources_external_uq', 'leads_customer_idx'],
          },
        ];
        await sql.raw('set plan_cache_mode = force_generic_plan').execute(conn);
        for (const [i, c] of statements.entries()) {
          await sql.raw(`prepare batch_${i}(${c.types}) as ${c.text}`).execute(conn);
          const { rows } = await sql.raw<Record<string, unknown>>(`explain (format json) execute batch_${i}(${c.args})`).execute(conn);
          const plan = JSON.stringify(rows);
          expect(plan, c.text).not.toContain('Seq Scan');
          for (const index of c.indexes) expect(plan, c.text).toContain(index);
        }
        await sql.raw('reset plan_cache_mode').execute(conn);
      });
    });
  }
});
