import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import { LongPoller, type PollSource } from '../src/channels/social/long-poller.js';
import { Leases } from '../src/domain/leases/leases.js';
import type { IntegrationRow } from '../src/db/schema.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} };

describe('VK/OK long pollers across processes', () => {
  let h: Harness;
  let row: IntegrationRow;
  beforeAll(async () => {
    h = await createHarness();
    const owner = await h.signUp();
    const id = await createIntegration(h, owner.accountId, 'social2_group');
    row = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  });
  afterAll(() => h.close());

  it('poll one integration from one process only: the one holding its lease', async () => {
    const polledBy: string[] = [];
    let enough!: () => void;
    const done = new Promise<void>((resolve) => (enough = resolve));
    // Two processes' pollers of one source, each with its own lease holder, on one database.
    const source = (who: string): PollSource => ({
      name: 'vk-poller',
      integrations: async (id) => (id === undefined || id === row.id ? [row] : []),
      poll: async () => {
        polledBy.push(who);
        if (polledBy.length >= 6) enough();
        await new Promise((resolve) => setImmediate(resolve));
        return { handled: 0, failed: false };
      },
    });
    const a = new LongPoller(source('a'), silent, 1, new Leases(h.services.deps));
    const b = new LongPoller(source('b'), silent, 1, new Leases(h.services.deps));
    a.start();
    b.start();
    try {
      await done;
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    expect(new Set(polledBy).size).toBe(1);
  });

  it('poll no more once stopped, even when the lease is granted after the stop', async () => {
    // Another process that stops lets its lease go; this one, asking at that moment, is granted it
    // after its own stop began. Here the stop comes while the loop looks the integration up, just
    // before it asks for the lease.
    let lookups = 0;
    let polls = 0;
    let stopped!: (stop: Promise<void>) => void;
    const stopping = new Promise<void>((resolve) => (stopped = resolve));
    const poller: LongPoller = new LongPoller(
      {
        name: 'vk-stop',
        integrations: async (id) => {
          if (id !== undefined && ++lookups === 2) stopped(poller.stop());
          return [row];
        },
        poll: async () => {
          polls++;
          await new Promise((resolve) => setImmediate(resolve));
          return { handled: 0, failed: false };
        },
      },
      silent,
      1,
      new Leases(h.services.deps),
    );
    poller.start();
    await stopping;
    expect(lookups).toBe(2);
    expect(polls).toBe(1);
    // The lease went back on the stop: another process takes it at once.
    expect(await new Leases(h.services.deps).hold(`vk-stop-poll:${row.id}`, 1000)).toBe(true);
  });
});
