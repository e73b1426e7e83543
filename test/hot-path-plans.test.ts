import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';
import { lockConversations, storeIncomingBatch } from '../src/domain/conversations/conversations.repo.js';
import { INGEST_LOCK_SENDERS } from '../src/db/migrations/0072-ingest-conversations.js';
import { INGEST_READ_CONVERSATIONS } from '../src/db/migrations/0078-ingest-rows-as-json.js';
import { keyedTransaction } from '../src/db/database.js';
import { genericPlan, planNodes, recordedTexts } from './helpers/statements.js';

// The hot path's statements are named on PostgreSQL and may keep a generic plan made while the
// tables were empty (a new install; autovacuum off). Such a plan must still use the index that
// answers the statement (docs/performance.md): with a plain (integration_id, id) index on
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
      for (const c of CASES) {
        let plan: string;
        if (DIALECT === 'postgres') {
          plan = JSON.stringify(await genericPlan(conn, c.text, `1, ${c.types.endsWith('text') ? "'x'" : '2'}`, c.types));
        } else {
          const { rows } = await sql.raw<Record<string, unknown>>(`explain query plan ${c.text.replace(/\$\d/g, '1')}`).execute(conn);
          plan = JSON.stringify(rows);
        }
        expect(plan, c.text).toContain(c.index);
      }
    });
  });

  // PostgreSQL only: SQLite ingests through its group commit and has no batch statements.
  if (DIALECT === 'postgres') {
    it('look every sender and conversation of an ingest batch up by index, also as generic plans', async () => {
      // The batch's reads take arrays; a join to them, planned on empty tables, hashed a
      // whole-table scan of messages and sources (docs/performance.md). Its
      // two statements run in a function (migration 0072), called in a keyed transaction, whose
      // begin makes PostgreSQL keep a generic plan of each; planned here with sequential scans on.
      const types = 'bigint[], text[], text[], text[], text[]';
      const args = "'{1}', '{x}', '{x}', '{message}', '{c}'";
      await t.db.kysely.connection().execute(async (conn) => {
        const statements = [
          { text: INGEST_LOCK_SENDERS, indexes: ['profiles_social_uq'] },
          {
            text: INGEST_READ_CONVERSATIONS,
            indexes: ['profiles_social_uq', 'messages_external_uq', 'sources_external_uq', 'leads_customer_idx'],
          },
        ];
        for (const c of statements) {
          const plan = JSON.stringify(await genericPlan(conn, c.text, args, types));
          expect(plan, c.text).not.toContain('Seq Scan');
          for (const index of c.indexes) expect(plan, c.text).toContain(index);
        }
      });
    });

    it("leave a batch write's parts without rows out of its statement", async () => {
      // Each part opened its table with every index and ran its statement triggers even without
      // rows: ~1 ms per batch (docs/performance.md).
      const one = [{}] as never[];
      const [known] = await recordedTexts(t.db.kysely, (recorder) =>
        storeIncomingBatch(
          recorder,
          { customers: [], profiles: [], sources: [], leads: [], messages: one, leadUpdates: one, deadlines: [], events: [] },
          0,
        ),
      );
      expect(known).toMatch(/insert into messages/);
      expect(known).toMatch(/update leads set/);
      expect(known).toMatch(/insert into events/);
      for (const left of ['insert into customers', 'insert into profiles', 'insert into sources', 'insert into leads', 'update sources'])
        expect(known).not.toContain(left);
    });

    it('keep one generic plan per statement in a keyed transaction, the batch write looking leads and sources up by key', async () => {
      const keys = {
        integrationIds: [1, 2],
        socialIds: ['x', 'y'],
        externalIds: ['a', 'b'],
        channelTypes: ['m', 'm'],
        channelIds: ['c', 'd'],
      };
      const texts = await recordedTexts(t.db.kysely, async (recorder) => {
        await expect(lockConversations(recorder, keys)).rejects.toThrow('one row per message');
        // Every part with a row: the write's largest shape (parts without rows are left out of it).
        // Not run (the recorder answers nothing), so the rows need no values.
        const one = [{}] as never[];
        const full = {
          customers: one,
          profiles: one,
          sources: one,
          leads: one,
          messages: one,
          leadUpdates: one,
          deadlines: one,
          events: [],
        };
        await storeIncomingBatch(recorder, full, 0);
      });
      const [lock, write] = texts;
      await keyedTransaction(t.db.kysely, async (trx) => {
        // A batch's lock taking arrays, run as ingest runs it (a named statement): PostgreSQL planned
        // it anew at every run, as arrays of other lengths than a generic plan's estimate.
        for (let i = 0; i < 3; i++) await lockConversations(trx, keys);
        const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`select generic_plans, custom_plans
          from pg_prepared_statements where statement = ${lock}`.execute(trx);
        expect(rows.map((r) => [Number(r.generic_plans), Number(r.custom_plans)])).toEqual([[3, 0]]);

        // The write's kept plan, made here on empty tables: its updates join arrays to leads and
        // sources, and must look them up by key rather than hash a scan of the table.
        const types = [...write.matchAll(/\$(\d+)::(\w+(?:\[\])?)/g)].sort((a, b) => Number(a[1]) - Number(b[1]));
        const args = types.map((m) => (m[2].endsWith('[]') ? "'{}'" : '0')).join(', ');
        const plan = await genericPlan(trx, write, args, types.map((m) => m[2]).join(', '));
        const scans = planNodes(plan).filter((n) => n['Relation Name'] === 'leads' || n['Relation Name'] === 'sources');
        expect(scans.map((n) => `${n['Node Type']} ${n['Relation Name']} ${n['Index Name'] ?? ''}`.trim()).sort()).toEqual([
          'Index Scan leads leads_pkey',
          'Index Scan sources sources_pkey',
          'ModifyTable leads',
          'ModifyTable leads',
          'ModifyTable sources',
          'ModifyTable sources',
        ]);
      });
    });
  }
});
