import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/server-process.js';
import { register, startCluster, type Cluster } from './cluster.js';

/**
 * Distribution of new leads (docs/api/automation.md) with two real server processes on one
 * PostgreSQL database: new leads arriving through both are each assigned once, in one rotation.
 */
let c: Cluster;
beforeAll(async () => {
  c = await startCluster();
}, 120_000);
afterAll(async () => {
  await c?.close();
});

const db = () => c.database.db.kysely;

/** Polls `check` until it holds (the servers work on their own time), failing after `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('distribution with two processes', () => {
  it('round robin: leads arriving through both are assigned once each, shares even', async () => {
    const owner = await register(c.a);
    const { account_id: accountId } = await db()
      .selectFrom('users')
      .select('account_id')
      .where('login', '=', owner.login)
      .executeTakeFirstOrThrow();
    const managers = [];
    for (let i = 0; i < 2; i++) {
      const row = await db()
        .insertInto('users')
        .values({
          account_id: accountId,
          login: `mp-manager-${i}-${accountId}@example.com`,
          name: `Manager ${i}`,
          password_hash: null,
          role: 'manager',
          confirmed: 1,
          allow_all_deals: 1,
          created_at: Date.now(),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      managers.push(row.id);
    }
    const w = await call(c.a, 'POST', '/v1.3/integrations', { token: owner.access, body: { type: 'widget' } });
    expect(w.status).toBe(200);
    const put = await call(c.b, 'PUT', `/v1.3/integrations/${w.body.id}/distribution`, {
      token: owner.access,
      body: { mode: 'round_robin', employees: managers },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);

    const visitors = 20;
    await Promise.all(
      Array.from({ length: visitors }, async (_, i) => {
        const base = i % 2 ? c.b : c.a;
        const session = await call(base, 'POST', '/widget/v1/sessions', { body: { key: w.body.widget.key } });
        const said = await call(base, 'POST', '/widget/v1/messages', {
          token: session.body.token,
          body: { clientId: `v${i}`, text: 'hello' },
        });
        expect(said.status).toBe(200);
      }),
    );
    const leads = () => db().selectFrom('leads').select(['id', 'user_id']).where('integration_id', '=', w.body.id).execute();
    await until(async () => (await leads()).filter((l) => l.user_id !== null).length === visitors, 60_000, 'every lead assigned');

    const assigned = await leads();
    expect(assigned).toHaveLength(visitors);
    const shares = managers.map((m) => assigned.filter((l) => l.user_id === m).length);
    expect(shares).toEqual([visitors / 2, visitors / 2]);
    // Once each: one assignment (`lead.changed` with userId) per lead, whichever process made it.
    const changes = await db()
      .selectFrom('events')
      .select(['lead_id', 'payload'])
      .where('account_id', '=', accountId)
      .where('type', '=', 'lead.changed')
      .execute();
    const assignments = changes.filter((e) => (JSON.parse(e.payload) as { changes?: string[] }).changes?.includes('userId'));
    expect(assignments.map((e) => e.lead_id).sort()).toEqual(assigned.map((l) => l.id).sort());
    const claims = await db().selectFrom('automation_claims').select('event_id').where('consumer', '=', 'distribution').execute();
    expect(new Set(claims.map((r) => r.event_id)).size).toBe(claims.length);
  });
});
