import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectOf } from '../src/db/database.js';
import type { IntegrationRow, StatusRow } from '../src/db/schema.js';
import { AutomationWorker } from '../src/automation/automation-worker.js';
import { sweepIdleLeads } from '../src/automation/idle-sweep.js';
import { tagsOfLeads } from '../src/domain/leads/leads.repo.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { automationFromNewest, createIntegrationRow, postRule } from './helpers/fixtures.js';
import { afterFirstRead } from './helpers/statements.js';

/**
 * Events a rule's actions cause set off no rule (docs/api/automation.md); an event another
 * transaction commits for the same lead while a run acts on it is not one of them. The run's
 * transaction is held, by a plugin on its database, right after it read the newest event id
 * before its `setStatus`, and the idle sweep commits the lead's `lead.idle` meanwhile (PostgreSQL:
 * another connection; SQLite has one writer, so the sweep commits after the run's transaction).
 */
let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;
let statuses: StatusRow[];

const db = () => h.database.db.kysely;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
  statuses = await db().selectFrom('statuses').selectAll().where('account_id', '=', owner.accountId).orderBy('id').execute();
});

afterAll(async () => {
  await h.close();
});

const rule = (payload: Record<string, unknown>) => postRule(h, owner, payload);

/** Runs `meanwhile` once, after the first read of the newest event id. */
const afterNewestEventRead = (meanwhile: () => Promise<void>) =>
  afterFirstRead((node) => node.includes('"func":"max"') && node.includes('"name":"events"'), meanwhile);

describe('an event committed by another transaction while a run acts on its lead', () => {
  it("is not taken for one the run caused: the lead's lead.idle still runs its rule", async () => {
    const active = statuses.find((s) => s.type === 'active')!;
    const moving = await rule({ event: 'message.incoming', actions: [{ type: 'setStatus', statusId: active.id }] });
    const idle = await rule({ event: 'lead.idle', idleMinutes: 1, actions: [{ type: 'addTag', tag: 'went-quiet' }] });
    await automationFromNewest(h);
    const { leadId } = await h.services.ingest.ingest(integration, {
      externalId: 'caused-1',
      datetime: h.clock.now(),
      sender: { socialId: 'caused-customer', name: 'Customer' },
      channel: { externalId: 'chat-caused', type: 'message' },
      text: 'hello',
    });

    const postgres = dialectOf(db()) === 'postgres';
    let swept = 0;
    const sweep = async () => {
      // The lead went quiet for the idle rule's minute while its message's run acts on it.
      h.clock.advance(2 * 60_000);
      swept = await sweepIdleLeads(h.services.deps);
    };
    const plugin = afterNewestEventRead(postgres ? sweep : async () => {});
    const worker = new AutomationWorker({ ...h.services.deps, db: { ...h.database.db, kysely: db().withPlugin(plugin) } }, async () => {});
    try {
      await worker.poll();
      if (!postgres) await sweep();
      expect(swept).toBe(1);
      await worker.poll();
    } finally {
      await worker.stop();
    }

    const lead = await db().selectFrom('leads').select('status_id').where('id', '=', leadId).executeTakeFirstOrThrow();
    expect(lead.status_id).toBe(active.id);
    expect((await tagsOfLeads(db(), [leadId])).get(leadId)).toEqual(['went-quiet']);
    const runs = async (id: number) =>
      (await db().selectFrom('automation_runs').select('lead_id').where('rule_id', '=', id).execute()).map((r) => Number(r.lead_id));
    expect(await runs(moving)).toEqual([leadId]);
    expect(await runs(idle)).toEqual([leadId]);
  });
});
