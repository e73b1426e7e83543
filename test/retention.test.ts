import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HistoryPruner } from '../src/events/retention.js';
import { Leases } from '../src/domain/leases/leases.js';
import { createHarness, type Harness } from './helpers/harness.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_EVENT_RETENTION_DAYS: '30' } });
});
afterAll(() => h.close());

const DAY = 24 * 3600 * 1000;
const db = () => h.database.db.kysely;

async function event(accountId: number, at: number): Promise<number> {
  const row = await db()
    .insertInto('events')
    .values({ account_id: accountId, type: 'lead.changed', lead_id: null, payload: '{}', created_at: at })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

async function delivery(webhookId: number, eventId: number, status: 'pending' | 'delivered' | 'dead', at: number): Promise<number> {
  const row = await db()
    .insertInto('deliveries')
    .values({
      webhook_id: webhookId,
      event_id: eventId,
      message_id: `msg_${eventId}`,
      lead_id: null,
      status,
      next_attempt_at: at,
      lease_until: null,
      leased_by: null,
      last_status_code: null,
      last_error: null,
      created_at: at,
      delivered_at: null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db()
    .insertInto('delivery_attempts')
    .values({ delivery_id: row.id, at, status_code: 500, duration_ms: 3, error: 'HTTP 500' })
    .execute();
  return row.id;
}

describe('pruning delivered history', () => {
  it('deletes finished deliveries and events past the retention, in batches, keeping what is pending or recent', async () => {
    const owner = await h.signUp();
    const now = h.clock.now();
    const old = now - 31 * DAY;
    const hook = await db()
      .insertInto('webhooks')
      .values({
        account_id: owner.accountId,
        url: 'https://example.com/hook',
        events: null,
        secret: 'whsec_x',
        api_version: 'v1.3',
        failing_since: null,
        created_at: old,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const oldEvents = [];
    for (let i = 0; i < 5; i++) oldEvents.push(await event(owner.accountId, old + i));
    await delivery(hook.id, oldEvents[0]!, 'delivered', old);
    await delivery(hook.id, oldEvents[1]!, 'dead', old);
    const pending = await delivery(hook.id, oldEvents[2]!, 'pending', old);
    const recent = await event(owner.accountId, now - DAY);
    const recentDelivery = await delivery(hook.id, recent, 'delivered', now - DAY);
    const before = (await db().selectFrom('events').select('id').execute()).map((e) => e.id);

    const pruner = new HistoryPruner(h.services.deps, new Leases(h.services.deps), 2);
    const pruned = await pruner.runOnce();
    expect(pruned.deliveries).toBe(2);
    const left = (await db().selectFrom('events').select('id').execute()).map((e) => e.id);
    // Every old event went (the account's own sign-up events too) except the one still pending.
    expect(left.sort((x, y) => x - y)).toEqual([oldEvents[2]!, ...before.filter((id) => id >= recent)].sort((x, y) => x - y));
    expect(pruned.events).toBe(before.length - left.length);
    expect((await db().selectFrom('deliveries').select('id').execute()).map((d) => d.id).sort()).toEqual([pending, recentDelivery].sort());
    expect((await db().selectFrom('delivery_attempts').select('delivery_id').execute()).map((a) => a.delivery_id).sort()).toEqual(
      [pending, recentDelivery].sort(),
    );

    // Another process's pruner waits while this one holds the pruning lease.
    expect(await new HistoryPruner(h.services.deps, new Leases(h.services.deps)).runOnce()).toEqual({ deliveries: 0, events: 0 });
  });
});
