import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAccount, type MigrateOptions } from '../src/domain/migration/account-migrator.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { seedSource } from './helpers/migration-source.js';

// Histories are read by many leads side by side and written a batch of leads per transaction
// (docs/migrate.md): a lead's history spans several pages of the source (50 messages each) and
// batches end between leads. A run stopped between batches leaves every lead's history whole or
// absent, and the next run completes it without a duplicate.
const LEADS = 24;
const PER_LEAD = 130;

let source: Harness;
let sourceUrl: string;
let owner: SignedUp;
let seeded: Awaited<ReturnType<typeof seedSource>>;
const targets: Harness[] = [];

beforeAll(async () => {
  source = await createHarness({ env: { PARLEY_API_RATE_LIMIT: '0' } });
  owner = await source.signUp();
  seeded = await seedSource(source, owner, { leads: LEADS, messagesPerLead: PER_LEAD });
  sourceUrl = await source.app.listen({ port: 0, host: '127.0.0.1' });
}, 120_000);
afterAll(async () => {
  for (const t of targets) await t.close();
  await source?.close();
});

function options(extra: Partial<MigrateOptions> = {}): MigrateOptions {
  return { from: sourceUrl, token: owner.access, dryRun: false, rate: 1000, concurrency: 3, sleep: async () => {}, ...extra };
}

/** Messages here per copied lead (by the lead's id at the source), and the total. */
async function messagesPerLead(h: Harness, accountId: number) {
  const db = h.database.db.kysely;
  const leads = await db
    .selectFrom('migration_ids')
    .select(['source_id', 'target_id'])
    .where('account_id', '=', accountId)
    .where('kind', '=', 'lead')
    .execute();
  const counts = await db
    .selectFrom('messages')
    .select(['lead_id', db.fn.countAll().as('n')])
    .where('account_id', '=', accountId)
    .groupBy('lead_id')
    .execute();
  const byLead = new Map(counts.map((c) => [Number(c.lead_id), Number(c.n)]));
  const external = await db.selectFrom('messages').select(['integration_id', 'external_id']).where('account_id', '=', accountId).execute();
  return {
    perLead: leads.map((l) => byLead.get(Number(l.target_id)) ?? 0),
    total: counts.reduce((n, c) => n + Number(c.n), 0),
    distinct: new Set(external.map((m) => `${m.integration_id}:${m.external_id}`)).size,
  };
}

describe('parley migrate: histories written in batches', () => {
  it('a run stopped between batches leaves each lead whole or empty; the next run copies the rest once', async () => {
    const h = await createHarness({ sqliteFile: true });
    targets.push(h);
    const stop = new AbortController();
    const partial = await migrateAccount(h.services, options({ signal: stop.signal }), (phase, done) => {
      if (phase === 'histories' && done >= LEADS / 3) stop.abort();
    });
    expect(partial.interrupted).toBe(true);
    const accountId = partial.accountId!;
    const after = await messagesPerLead(h, accountId);
    // Pages of several leads were read when it stopped; what was written is whole leads.
    expect(after.total).toBeGreaterThan(0);
    expect(after.total).toBeLessThan(seeded.messages);
    expect(after.perLead.every((n) => n === 0 || n === PER_LEAD)).toBe(true);
    expect(copied(partial.copied, 'messages')).toBeGreaterThanOrEqual(after.total);

    const rest = await migrateAccount(h.services, options(), () => {});
    expect(rest.interrupted).toBe(false);
    const done = await messagesPerLead(h, accountId);
    expect(done.perLead).toEqual(Array.from({ length: LEADS }, () => PER_LEAD));
    expect(done.total).toBe(seeded.messages);
    expect(done.distinct).toBe(seeded.messages);
    // Every lead's last message and unread count were settled from its whole history.
    const leads = await h.database.db.kysely
      .selectFrom('leads')
      .select(['last_message_id', 'unread_count'])
      .where('account_id', '=', accountId)
      .execute();
    expect(leads.every((l) => l.last_message_id !== null)).toBe(true);
    expect(leads.filter((l) => l.unread_count > 0)).toHaveLength(LEADS / 3);

    const again = await migrateAccount(h.services, options(), () => {});
    expect(again.copied).toEqual({});
    expect((await messagesPerLead(h, accountId)).total).toBe(seeded.messages);
  }, 300_000);
});

function copied(c: Record<string, number>, kind: string): number {
  return c[kind] ?? 0;
}
