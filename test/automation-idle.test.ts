import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IntegrationRow } from '../src/db/schema.js';
import { AutomationWorker } from '../src/automation/automation-worker.js';
import { tagsOfLeads } from '../src/domain/leads/leads.repo.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegrationRow, postRule } from './helpers/fixtures.js';
import { statementCounter } from './helpers/statements.js';

/**
 * Automation with nothing to do: every process runs it for every process's events
 * (docs/performance.md "Several processes"), so with no rule and no distribution it passes the
 * events over unread, and a rule made later acts on what comes after.
 */
let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;
let seq = 0;

const db = () => h.database.db.kysely;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
});

afterAll(async () => {
  await h.close();
});

async function incoming(customers: number): Promise<number[]> {
  const leads: number[] = [];
  for (let c = 0; c < customers; c++) {
    const n = ++seq;
    const { leadId } = await h.services.ingest.ingest(integration, {
      externalId: `idle-${n}`,
      datetime: h.clock.now(),
      sender: { socialId: `idle-customer-${n}`, name: `Customer ${n}` },
      channel: { externalId: `idle-chat-${n}`, type: 'message' },
      text: `Is the blue hoodie in stock? (${n})`,
    });
    leads.push(leadId);
  }
  return leads;
}

it('passes the events over unread while no rule or distribution exists, and a rule made later acts on the next ones', async () => {
  const { counter, tables, reset } = statementCounter();
  const worker = new AutomationWorker({ ...h.services.deps, db: { ...h.database.db, kysely: db().withPlugin(counter) } }, async () => {});
  try {
    // It starts at the newest event; its first read of events is taken to have work, and finds none.
    await worker.poll();
    await incoming(1);
    await worker.poll();
    await incoming(5);
    reset();
    await worker.poll();
    const read = [...tables()];
    reset();
    await worker.poll();
    // The five messages cost no statement of their own: neither their new leads (distribution)
    // nor their rules were looked up, as a read of the events would (the statements left are the
    // sweeps').
    const lookups = (list: string[]) => list.filter((table) => table === 'leads' || table === 'automation_rules');
    expect(lookups(read)).toEqual(lookups(tables()));

    await postRule(h, owner, {
      name: 'hoodie',
      event: 'message.incoming',
      conditions: [{ field: 'message.text', op: 'contains', value: 'hoodie' }],
      actions: [{ type: 'addTag', tag: 'hoodie' }],
    });
    const [lead] = await incoming(1);
    await worker.poll();
    expect((await tagsOfLeads(db(), [lead!])).get(lead!)).toEqual(['hoodie']);
  } finally {
    await worker.stop();
  }
});
