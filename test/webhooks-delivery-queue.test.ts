import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery, sql } from 'kysely';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { DIALECT } from './helpers/database.js';
import { webhookFixture } from './helpers/webhook-fixture.js';
import { DISABLE_AFTER_MS } from '../src/webhooks/delivery-worker.js';
import {
  claimDeliveries,
  claimStatement,
  recordOutcomes,
  type ClaimedDelivery,
  type DeliveryOutcome,
} from '../src/webhooks/delivery-queue.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import { groupCommitOf } from '../src/db/group-commit.js';

// The delivery queue of issue 9's performance pass: outcomes recorded in batches (with the claim of
// the next deliveries in the same transaction), claims that read only open endpoints' pending rows.

let h: Harness;
const fx = webhookFixture(() => h);
const { receiver, worker, account } = fx;
beforeAll(async () => {
  h = await createHarness({
    env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1', PARLEY_WEBHOOK_RETRY_SCALE: '0.001', PARLEY_WEBHOOK_TIMEOUT_MS: '2000' },
  });
});
afterEach(async () => {
  await fx.stopAll();
  // Claims are global: one test's pending deliveries must not reach the next one's workers.
  await db().deleteFrom('webhooks').execute();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

async function register(owner: SignedUp, url: string, events?: string[]): Promise<number> {
  const res = await h.request({ method: 'POST', url: '/v1.3/webhooks', token: owner.access, payload: { url, events } });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { id: number }).id;
}

let seq = 0;
function message(socialId: string): IncomingMessage {
  seq += 1;
  return {
    externalId: `q-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: `Customer ${socialId}` },
    channel: { externalId: `chat-${socialId}`, type: 'message' },
    text: `text ${seq}`,
  };
}

/** Resolves once `check` holds, re-checking after each turn of the event loop (a bound, not a sleep). */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setImmediate(resolve));
}

const deliveriesOf = (webhookId: number) =>
  db().selectFrom('deliveries').selectAll().where('webhook_id', '=', webhookId).orderBy('id').execute();
const webhook = (id: number) => db().selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const claimNow = (workerId: string, limit = 50) => {
  const now = h.clock.now();
  return claimDeliveries(h.database.db, { now, leaseUntil: now + 60_000, workerId, perEndpoint: 50, limit });
};
const outcome = (job: ClaimedDelivery, over: Partial<DeliveryOutcome> = {}): DeliveryOutcome => ({
  id: job.id,
  webhookId: job.webhook_id,
  leaseUntil: job.lease_until,
  attempts: job.attempts + 1,
  statusCode: 200,
  durationMs: 3,
  error: null,
  state: 'delivered',
  nextAttemptAt: null,
  ...over,
});
const policy = (workerId: string) => ({ now: h.clock.now(), workerId, disableIfFailingSince: h.clock.now() - DISABLE_AFTER_MS });

describe('webhook delivery queue', () => {
  it('records a batch of outcomes in one go, each with its own result, attempt and lease check', async () => {
    const { owner, integration } = await account();
    const ok = await register(owner, 'http://127.0.0.1:9/ok', ['customer.created']);
    const failing = await register(owner, 'http://127.0.0.1:9/failing', ['customer.created']);
    for (const who of ['a1', 'a2', 'a3', 'a4']) await h.services.ingest.ingest(integration, message(who));
    const jobs = (await claimNow('batch')).filter((j) => j.webhook_id === ok || j.webhook_id === failing);
    expect(jobs).toHaveLength(8);
    // The claim brings what the send needs (one statement: no second read per claim).
    expect(jobs[0]).toMatchObject({
      url: expect.stringContaining('http://127.0.0.1:9/'),
      secret: expect.stringMatching(/^whsec_/),
      api_version: 'v1.3',
    });
    expect(JSON.parse(jobs[0].payload)).toMatchObject({ type: 'customer.created', accountId: owner.accountId });

    const [okJobs, failJobs] = [jobs.filter((j) => j.webhook_id === ok), jobs.filter((j) => j.webhook_id === failing)];
    const now = h.clock.now();
    // Leases that "expired" meanwhile: another worker holds one row now, this worker the other again.
    const [stolen, reclaimed] = [okJobs[2], okJobs[3]];
    await db()
      .updateTable('deliveries')
      .set({ leased_by: 'other', lease_until: now + 99_000 })
      .where('id', '=', stolen.id)
      .execute();
    await db()
      .updateTable('deliveries')
      .set({ lease_until: now + 98_000 })
      .where('id', '=', reclaimed.id)
      .execute();
    await recordOutcomes(
      h.database.db,
      [
        outcome(okJobs[0]),
        outcome(okJobs[1]),
        outcome(stolen),
        outcome(reclaimed),
        outcome(failJobs[0], { statusCode: 500, error: 'HTTP 500: nope', state: 'retry', nextAttemptAt: now + 5 }),
        outcome(failJobs[1], { statusCode: null, error: 'timeout after 2000 ms', state: 'retry', nextAttemptAt: now + 5 }),
        outcome(failJobs[2], { statusCode: 410, error: 'HTTP 410', state: 'dead' }),
      ],
      policy('batch'),
    );

    const okRows = await deliveriesOf(ok);
    expect(okRows.slice(0, 2).map((d) => [d.status, d.attempts, d.last_status_code, d.delivered_at, d.lease_until, d.leased_by])).toEqual([
      ['delivered', 1, 200, now, null, null],
      ['delivered', 1, 200, now, null, null],
    ]);
    // The lease it was sent under is gone: the row is left to the new lease (the attempt is logged).
    expect(okRows[2]).toMatchObject({ status: 'pending', attempts: 0, leased_by: 'other', lease_until: now + 99_000 });
    expect(okRows[3]).toMatchObject({ status: 'pending', attempts: 0, leased_by: 'batch', lease_until: now + 98_000 });
    const failRows = (await deliveriesOf(failing)).slice(0, 3);
    expect(failRows.map((d) => [d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at, d.lease_until])).toEqual([
      ['pending', 1, 500, 'HTTP 500: nope', now + 5, null],
      ['pending', 1, null, 'timeout after 2000 ms', now + 5, null],
      ['dead', 1, 410, 'HTTP 410', failRows[2].created_at, null],
    ]);
    const attempts = await db()
      .selectFrom('delivery_attempts')
      .select(['delivery_id', 'status_code', 'error', 'at', 'duration_ms'])
      .where(
        'delivery_id',
        'in',
        jobs.map((j) => j.id),
      )
      .orderBy('id')
      .execute();
    expect(attempts).toHaveLength(7);
    expect(attempts.every((a) => a.at === now && a.duration_ms === 3)).toBe(true);
    expect(attempts.find((a) => a.delivery_id === failJobs[1].id)).toMatchObject({ status_code: null, error: 'timeout after 2000 ms' });
    // Endpoint health: failures only start the failing clock; successes keep it stopped.
    expect((await webhook(ok)).failing_since).toBeNull();
    expect((await webhook(failing)).failing_since).toBe(now);
  });

  it('a success in a batch keeps its endpoint healthy; failures only for 5 days disable it', async () => {
    const { owner, integration } = await account();
    const mixed = await register(owner, 'http://127.0.0.1:9/mixed', ['customer.created']);
    const down = await register(owner, 'http://127.0.0.1:9/down', ['customer.created']);
    const longAgo = h.clock.now() - DISABLE_AFTER_MS;
    await db().updateTable('webhooks').set({ failing_since: longAgo }).where('id', 'in', [mixed, down]).execute();
    for (const who of ['b1', 'b2']) await h.services.ingest.ingest(integration, message(who));
    const jobs = (await claimNow('health')).filter((j) => j.webhook_id === mixed || j.webhook_id === down);
    const fail = { statusCode: 500, error: 'HTTP 500', state: 'retry' as const, nextAttemptAt: h.clock.now() + 5 };
    const [m1, m2] = jobs.filter((j) => j.webhook_id === mixed);
    const downJobs = jobs.filter((j) => j.webhook_id === down);
    await recordOutcomes(h.database.db, [outcome(m1, fail), outcome(m2), ...downJobs.map((j) => outcome(j, fail))], policy('health'));
    expect(await webhook(mixed)).toMatchObject({ status: 1, failing_since: null });
    expect(await webhook(down)).toMatchObject({ status: 0, failing_since: longAgo });
  });

  it('records nothing for deliveries deleted while out, and the rest of the batch all the same', async () => {
    const { owner, integration } = await account();
    const kept = await register(owner, 'http://127.0.0.1:9/kept', ['customer.created']);
    const gone = await register(owner, 'http://127.0.0.1:9/gone', ['customer.created']);
    await h.services.ingest.ingest(integration, message('c1'));
    const jobs = (await claimNow('gone')).filter((j) => j.webhook_id === kept || j.webhook_id === gone);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/webhooks/${gone}`, token: owner.access })).statusCode).toBe(200);
    await recordOutcomes(
      h.database.db,
      jobs.map((j) => outcome(j)),
      policy('gone'),
    );
    const attempts = await db()
      .selectFrom('delivery_attempts')
      .select('delivery_id')
      .where(
        'delivery_id',
        'in',
        jobs.map((j) => j.id),
      )
      .execute();
    expect(attempts.map((a) => a.delivery_id)).toEqual(jobs.filter((j) => j.webhook_id === kept).map((j) => j.id));
    expect((await deliveriesOf(kept)).map((d) => d.status)).toEqual(['delivered']);
  });

  it('a late outcome of a worker whose lease was taken over changes nothing of the delivery', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    r.respond = (n) => (n === 1 ? 500 : 200);
    const hook = await register(owner, `${r.url}/hook`, ['customer.created']);
    await h.services.ingest.ingest(integration, message('d1'));
    const slow = worker({}, 'slow');
    const [job] = await slow.claim(10);
    h.clock.advance(h.config.webhookTimeoutMs + 30_000 + 1);
    expect(await worker({}, 'quick').runOnce()).toBe(1); // delivered by the other worker
    await slow.deliver(job); // the first worker's send finally goes out, and fails
    const [row] = await deliveriesOf(hook);
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200, lease_until: null });
    const log = await db().selectFrom('delivery_attempts').select('status_code').where('delivery_id', '=', job.id).orderBy('id').execute();
    expect(log.map((a) => a.status_code)).toEqual([200, 500]);
  });

  it('a busy worker claims new deliveries without waiting for a send to finish or for the poll; stopping records what is out', async () => {
    const { owner, integration } = await account();
    const slow = await receiver();
    const fast = await receiver();
    slow.hold = true;
    const slowHook = await register(owner, `${slow.url}/slow`, ['customer.created']);
    const fastHook = await register(owner, `${fast.url}/fast`, ['message.incoming']);
    await h.services.ingest.ingest(integration, message('e1'));
    const w = worker({ eventsPollMs: 600_000, webhookTimeoutMs: 60_000 });
    w.start();
    await slow.waitFor(1);
    await until(async () => (await deliveriesOf(fastHook)).every((d) => d.status === 'delivered'));
    // The slow endpoint's send is out (the worker is busy) and nothing else is: no send will finish
    // and the poll is far away. A new delivery is claimed all the same.
    await h.services.ingest.ingest(integration, message('e2'));
    await fast.waitFor(2);
    slow.release();
    await w.stop();
    const rows = [...(await deliveriesOf(slowHook)), ...(await deliveriesOf(fastHook))];
    expect(rows.map((d) => [d.status, d.lease_until])).toEqual(rows.map(() => ['delivered', null]));
  });

  if (DIALECT === 'postgres') {
    it('records and claims in one named call, reading the pending rows through the partial indexes, never the backlog', async () => {
      const { owner, integration } = await account();
      const hook = await register(owner, 'http://127.0.0.1:9/kept', ['customer.created']);
      for (const who of ['k1', 'k2', 'k3']) await h.services.ingest.ingest(integration, message(who));
      // A backlog beside the due rows (due in an hour), so that only the indexes make a claim cheap.
      await sql`insert into deliveries (webhook_id, event_id, message_id, lead_id, next_attempt_at, created_at)
        select d.webhook_id, d.event_id, d.message_id, null, ${h.clock.now() + 3_600_000}, ${h.clock.now()}
        from (select * from deliveries where webhook_id = ${hook} limit 1) as d, generate_series(1, 3000)`.execute(db());
      await sql`analyze deliveries`.execute(db());
      await db()
        .transaction()
        .execute(async (trx) => {
          // One connection and one transaction: its prepared statements are those of the claims and
          // the record. Its statistics (pg_stat_xact_*) also hold what earlier transactions of the
          // connection did until the backend next reports them (at most once a second), so the
          // claims' and the record's scans are the difference from the transaction's start.
          const onOne = { ...h.database.db, kysely: trx };
          const counted = async () => {
            const { rows } = await sql<{ seq: string; fetched: string }>`
              select seq_scan as seq, idx_tup_fetch as fetched from pg_stat_xact_user_tables
              where relid = 'deliveries'::regclass`.execute(trx);
            return { seq: Number(rows[0]?.seq ?? 0), fetched: Number(rows[0]?.fetched ?? 0) };
          };
          const before = await counted();
          const now = h.clock.now();
          const request = (workerId: string, limit: number) => ({ now, leaseUntil: now + 60_000, workerId, perEndpoint: 50, limit });
          const first = await claimDeliveries(onOne, request('kept', 2));
          expect(first.filter((j) => j.webhook_id === hook)).toHaveLength(2);
          // The record of two and the claim of the third in one round.
          const next = await recordOutcomes(
            onOne,
            first.map((j) => outcome(j)),
            policy('kept'),
            request('kept', 10),
          );
          expect(next.filter((j) => j.webhook_id === hook)).toHaveLength(1);
          const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(trx);
          const texts = rows.map((r) => r.statement);
          expect(texts.filter((t) => t.includes('parley_webhook_round'))).toHaveLength(1);
          expect(texts.filter((t) => t.includes('with busy as') || t.includes('jsonb_to_recordset'))).toEqual([]);
          const after = await counted();
          expect(after.seq - before.seq).toBe(0);
          // Two claims and a record: a few dozen rows, not the 3,000 waiting.
          expect(after.fetched - before.fetched).toBeLessThan(200);
        });
      expect((await deliveriesOf(hook)).filter((d) => d.status === 'delivered')).toHaveLength(2);
    });

    it('keeps the round function on one generic plan per connection, looking rows up by key', async () => {
      const { rows } = await sql<{ config: string[] }>`
        select proconfig as config from pg_proc where proname = 'parley_webhook_round'
          and pronamespace = (select oid from pg_namespace where nspname = current_schema())`.execute(db());
      expect(rows).toHaveLength(1);
      expect(rows[0].config).toEqual(expect.arrayContaining(['plan_cache_mode=force_generic_plan', 'enable_seqscan=off']));
    });
  }

  if (DIALECT === 'sqlite') {
    it("a worker round takes a savepoint of the ingests' transaction: one commit for a message and a round queued together", async () => {
      const { owner, integration } = await account();
      await register(owner, 'http://127.0.0.1:9/shared', ['message.incoming']);
      const group = groupCommitOf(db());
      const before = group.batches;
      const unitsBefore = group.units;
      // Alone, a claim is a transaction of its own, at once.
      expect(await claimNow('shared')).toEqual([]);
      expect(group.batches).toBe(before);
      // A round queued while a message is: one transaction, whose claim sees the message's delivery.
      const [, jobs] = await Promise.all([h.services.ingest.ingest(integration, message('s1')), claimNow('shared')]);
      expect([group.batches - before, group.units - unitsBefore]).toEqual([1, 2]);
      expect(jobs).toHaveLength(1);
    });
  }

  if (DIALECT === 'sqlite') {
    it("a claim reads open endpoints' pending rows through the partial indexes, never the backlog", async () => {
      const now = h.clock.now();
      const statement = claimStatement({ now, leaseUntil: now + 1, workerId: 'plan', perEndpoint: 8, limit: 64 }).compile(db());
      const plan = await db().executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]),
      );
      const details = plan.rows.map((r) => r.detail);
      expect(details).toContain('SEARCH x USING INDEX deliveries_pending_idx (webhook_id=? AND next_attempt_at<?)');
      expect(details.some((d) => /deliveries USING COVERING INDEX deliveries_leased_idx/.test(d))).toBe(true);
      expect(details.some((d) => /^SEARCH e USING COVERING INDEX deliveries_lead_pending_idx/.test(d))).toBe(true);
      // No full pass over deliveries (a scan of the table or of a whole index of it) anywhere.
      expect(details.filter((d) => /^SCAN (deliveries|d|x|e|c)\b/.test(d) && !/deliveries_leased_idx/.test(d))).toEqual([]);
    });
  }
});
