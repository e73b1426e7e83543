import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectOf, openDatabase, type Db } from '../src/db/database.js';
import type { IntegrationRow } from '../src/db/schema.js';
import { AutomationWorker } from '../src/automation/automation-worker.js';
import { claimRuns, saveQuietRuns } from '../src/automation/rule-runs.repo.js';
import { tagsOfLeads } from '../src/domain/leads/leads.repo.js';
import type { Logger } from '../src/domain/context.js';
import { DIALECT } from './helpers/database.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { automationFromNewest, createIntegrationRow, postRule } from './helpers/fixtures.js';
import { afterFirstRead } from './helpers/statements.js';

/**
 * A rule deleted while a batch that read it runs (docs/api/automation.md): the deleted rule does
 * not run, and the other rules' runs of the same events are done. The batch's database holds the
 * batch, by a plugin, right after it read the enabled rules, and another connection deletes the
 * rule meanwhile (committed before the batch takes its runs, on both databases).
 */
let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;
/** Another connection to the same database: SQLite file or PostgreSQL schema. */
let other: Db;
const warnings: string[] = [];
const log: Logger = { info() {}, debug() {}, error() {}, warn: (_obj: unknown, msg?: string) => void warnings.push(msg ?? '') } as Logger;

const db = () => h.database.db.kysely;

beforeAll(async () => {
  h = await createHarness({ log, sqliteFile: true });
  owner = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
  other =
    dialectOf(db()) === 'postgres'
      ? await openDatabase({ databaseUrl: h.database.url, dataDir: '', poolSize: 1 })
      : await openDatabase({ dataDir: h.dataDir, sqliteFile: 'parley.db' });
});

afterAll(async () => {
  await other.close();
  await h.close();
});

/** Runs `meanwhile` once, after the worker's first read of the rules. */
const afterRulesRead = (meanwhile: () => Promise<void>) =>
  afterFirstRead((node, kind) => kind === 'SelectQueryNode' && node.includes('"name":"automation_rules"'), meanwhile);

async function deleteRule(id: number) {
  const res = await h.request({ method: 'DELETE', url: `/v1.3/automation/rules/${id}`, token: owner.access });
  expect(res.statusCode, res.body).toBeLessThan(300);
}

/**
 * A worker whose batch deletes `rule` right after reading the rules. `inFlight` (PostgreSQL): the
 * deletion is left uncommitted and committed only once the batch waits for its lock.
 */
async function pollDeleting(rule?: number, inFlight = false) {
  let committed: Promise<void> = Promise.resolve();
  const meanwhile = async () => {
    if (!inFlight) {
      await other.kysely
        .deleteFrom('automation_rules')
        .where('id', '=', rule ?? 0)
        .execute();
      return;
    }
    // One connection in `other`'s pool: the transaction's statements share it.
    await sql`begin`.execute(other.kysely);
    await other.kysely
      .deleteFrom('automation_rules')
      .where('id', '=', rule ?? 0)
      .execute();
    const deleter = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(other.kysely)).rows[0].pid;
    committed = (async () => {
      // Committed once a statement of the batch waits for the deletion's lock (bounded, no sleep).
      for (let i = 0; i < 10_000; i++) {
        const waiting = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where ${deleter} = any(pg_blocking_pids(pid))`.execute(db());
        if (waiting.rows[0].n > 0) {
          waited = true;
          break;
        }
      }
      await sql`commit`.execute(other.kysely);
    })();
  };
  const kysely = rule === undefined ? db() : db().withPlugin(afterRulesRead(meanwhile));
  const worker = new AutomationWorker({ ...h.services.deps, log, db: { ...h.database.db, kysely } }, async () => {});
  try {
    await worker.poll();
  } finally {
    await committed;
    await worker.stop();
  }
}

/** Whether the last in-flight deletion saw the batch wait for its lock. */
let waited = false;

let seq = 0;
const message = (customer: string, text = 'hello') =>
  h.services.ingest.ingest(integration, {
    externalId: `deleted-rule-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: customer, name: 'Customer' },
    channel: { externalId: `chat-${customer}`, type: 'message' },
    text,
  });

/** Event ids of a rule's runs, as its runs endpoint answers them. */
async function runEvents(rule: number): Promise<number[]> {
  const res = await h.request({ method: 'GET', url: `/v1.3/automation/rules/${rule}/runs`, token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { runs: Array<{ eventId: number }> }).runs.map((r) => r.eventId).sort((a, b) => a - b);
}

const newestEventOf = async (leadId: number) =>
  Number(
    (
      await db()
        .selectFrom('events')
        .select('id')
        .where('lead_id', '=', leadId)
        .where('type', '=', 'message.incoming')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow()
    ).id,
  );

describe('a rule deleted while a batch that read it runs', () => {
  it('does not run, and the other rules run for the same events (runs that act on the lead)', async () => {
    const kept = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'kept-a' }] });
    const gone = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'gone-a' }] });
    await automationFromNewest(h);
    warnings.length = 0;
    const { leadId } = await message('acting-customer');

    await pollDeleting(gone);

    expect(warnings).not.toContain('automation rules failed');
    expect((await tagsOfLeads(db(), [leadId])).get(leadId)).toEqual(['kept-a']);
    expect(await runEvents(kept)).toEqual([await newestEventOf(leadId)]);
    expect(await db().selectFrom('automation_runs').select('id').where('rule_id', '=', gone).execute()).toEqual([]);
    await deleteRule(kept);
  });

  it('does not run, and the other rules run for the same events (runs that change nothing)', async () => {
    const kept = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'kept-b' }] });
    const gone = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'gone-b' }] });
    await automationFromNewest(h);
    const { leadId } = await message('quiet-customer');
    await pollDeleting();
    const first = await newestEventOf(leadId);
    expect((await tagsOfLeads(db(), [leadId])).get(leadId)?.sort()).toEqual(['gone-b', 'kept-b']);
    // The lead has both tags: its next message's runs change nothing (quiet runs).
    warnings.length = 0;
    await message('quiet-customer', 'still there?');

    await pollDeleting(gone);

    expect(warnings).not.toContain('automation rules failed');
    expect(await runEvents(kept)).toEqual([first, await newestEventOf(leadId)]);
    expect(await db().selectFrom('automation_quiet_runs').select('event_id').where('rule_id', '=', gone).execute()).toEqual([]);
    await deleteRule(kept);
  });
});

// SQLite has one writer: a deletion is never under way while a batch writes.
if (DIALECT === 'postgres')
  describe('a rule whose deletion is under way while a batch that read it takes its runs (PostgreSQL)', () => {
    it('is waited for and left out; the other rules run', async () => {
      const kept = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'kept-d' }] });
      const gone = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'gone-d' }] });
      await automationFromNewest(h);
      const { leadId } = await message('in-flight-customer');
      await pollDeleting();
      const first = await newestEventOf(leadId);
      warnings.length = 0;
      await message('in-flight-customer', 'still there?');

      await pollDeleting(gone, true);

      expect(waited).toBe(true);
      expect(warnings).not.toContain('automation rules failed');
      expect(await runEvents(kept)).toEqual([first, await newestEventOf(leadId)]);
      expect(await db().selectFrom('automation_rules').select('id').where('id', '=', gone).execute()).toEqual([]);
      await deleteRule(kept);
    });
  });

describe('taking runs of a rule that no longer exists', () => {
  it('leaves its runs out and takes the others', async () => {
    const kept = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'kept-c' }] });
    const gone = await postRule(h, owner, { event: 'message.incoming', actions: [{ type: 'addTag', tag: 'gone-c' }] });
    await deleteRule(gone);
    const now = h.clock.now();
    const wanted = [
      { ruleId: gone, eventId: 1_000_001, leadId: null },
      { ruleId: kept, eventId: 1_000_001, leadId: null },
    ];
    const claimed = await db()
      .transaction()
      .execute((trx) => claimRuns(trx, wanted, now, 60_000));
    expect(claimed.fresh.map((r) => Number(r.rule_id))).toEqual([kept]);
    expect(claimed.resumed).toEqual([]);
    await db()
      .transaction()
      .execute((trx) =>
        saveQuietRuns(
          trx,
          wanted.map((w) => ({ ...w, eventId: 1_000_002, results: [{ type: 'addTag', ok: true }] })),
          now,
        ),
      );
    const quiet = await db().selectFrom('automation_quiet_runs').select('rule_id').where('event_id', '=', 1_000_002).execute();
    expect(quiet.map((r) => Number(r.rule_id))).toEqual([kept]);
    await deleteRule(kept);
  });
});
