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
});
