import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationRow } from '../src/db/schema.js';
import type { AutomationWorker } from '../src/automation/automation-worker.js';
import { createAutomationWorker } from '../src/automation/start.js';
import { pickEmployee } from '../src/domain/automation/distribution.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegrationRow, createLead, createManager, postRule, type ManagerFixture } from './helpers/fixtures.js';

/**
 * Distribution of new leads (docs/api/automation.md): the settings route, round robin and least
 * busy over leads ingested and committed, availability, and once-only assignment when the same
 * events are read again.
 */
let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let managers: ManagerFixture[];
let integration: IntegrationRow;
let worker: AutomationWorker;
let seq = 0;

const db = () => h.database.db.kysely;

async function newLead(text = 'hello'): Promise<number> {
  const n = ++seq;
  const { leadId } = await h.services.ingest.ingest(integration, {
    externalId: `dist-${n}`,
    datetime: h.clock.now(),
    sender: { socialId: `customer-${n}`, name: `Customer ${n}` },
    channel: { externalId: `chat-${n}`, type: 'message' },
    text,
  });
  return leadId;
}

async function assignee(leadId: number): Promise<number | null> {
  const row = await db().selectFrom('leads').select('user_id').where('id', '=', leadId).executeTakeFirstOrThrow();
  return row.user_id;
}

const put = (body: Record<string, unknown>, token = owner.access, id = integration.id) =>
  h.request({ method: 'PUT', url: `/v1.3/integrations/${id}/distribution`, token, payload: body });

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
  managers = [];
  for (let i = 0; i < 3; i++) managers.push(await createManager(h, owner));
  worker = createAutomationWorker(h.services);
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await h.close();
});

/**
 * Round robin over the managers, nine new leads, and two consumers reading their events at once (as
 * two processes do): who got each lead, and how many `lead.changed` events the leads have.
 */
async function nineLeadsTwoConsumers() {
  await put({ mode: 'round_robin', employees: managers.map((m) => m.userId) });
  const leads: number[] = [];
  for (let i = 0; i < 9; i++) leads.push(await newLead());
  const second = createAutomationWorker(h.services);
  await Promise.all([worker.poll(), second.poll()]);
  await second.stop();
  const got = await Promise.all(leads.map(assignee));
  const changes = await db()
    .selectFrom('events')
    .select('lead_id')
    .where('type', '=', 'lead.changed')
    .where('lead_id', 'in', leads)
    .execute();
  return { leads, got, changes: changes.length };
}

describe('pickEmployee', () => {
  it('takes the next id after the last, wrapping round', () => {
    expect(pickEmployee([3, 1, 2], null)).toBe(1);
    expect(pickEmployee([1, 2, 3], 1)).toBe(2);
    expect(pickEmployee([1, 2, 3], 3)).toBe(1);
    expect(pickEmployee([], 3)).toBeUndefined();
  });
  it('least busy: the fewest open leads, ties in turn', () => {
    const counts = new Map([
      [1, 2],
      [2, 0],
      [3, 0],
    ]);
    expect(pickEmployee([1, 2, 3], null, counts)).toBe(2);
    expect(pickEmployee([1, 2, 3], 2, counts)).toBe(3);
  });
});

describe('distribution settings', () => {
  it('answers off until set, then what was set', async () => {
    const get = await h.request({ method: 'GET', url: `/v1.3/integrations/${integration.id}/distribution`, token: owner.access });
    expect(get.statusCode).toBe(200);
    expect(get.json()).toEqual({ mode: 'off', onlyAvailable: true });
    const res = await put({ mode: 'round_robin', employees: managers.map((m) => m.userId), onlyAvailable: true });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ mode: 'round_robin', employees: managers.map((m) => m.userId), onlyAvailable: true });
  });

  it('refuses bad input with the path of the bad part, storing nothing', async () => {
    const stranger = await createManager(h, other);
    const before = await h.request({ method: 'GET', url: `/v1.3/integrations/${integration.id}/distribution`, token: owner.access });
    const bad = await put({ mode: 'round_robin', employees: [managers[0].userId, stranger.userId] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details).toContainEqual(expect.objectContaining({ path: 'body.employees.1' }));
    const mode = await put({ mode: 'fastest' });
    expect(mode.statusCode).toBe(400);
    const after = await h.request({ method: 'GET', url: `/v1.3/integrations/${integration.id}/distribution`, token: owner.access });
    expect(after.json()).toEqual(before.json());
  });

  it('is the owner’s: a manager gets 403, another account 404', async () => {
    expect((await put({ mode: 'off' }, managers[0].access)).statusCode).toBe(403);
    expect((await put({ mode: 'off' }, other.access)).statusCode).toBe(404);
  });
});

describe('availability', () => {
  it('an employee switches itself away; another manager may not; the owner may', async () => {
    const [a, b] = managers;
    const self = await h.request({ method: 'PUT', url: `/v1.3/managers/${a.userId}`, token: a.access, payload: { available: false } });
    expect(self.statusCode, self.body).toBe(200);
    expect(self.json().available).toBe(false);
    const peer = await h.request({ method: 'PUT', url: `/v1.3/managers/${a.userId}`, token: b.access, payload: { available: true } });
    expect(peer.statusCode).toBe(403);
    const sneaky = await h.request({
      method: 'PUT',
      url: `/v1.3/managers/${a.userId}`,
      token: a.access,
      payload: { available: true, allowAllDeals: true },
    });
    expect(sneaky.statusCode).toBe(403);
    const list = await h.request({ method: 'GET', url: '/v1.3/managers', token: b.access });
    expect(list.json().find((e: { id: number }) => e.id === a.userId).available).toBe(false);
    const byOwner = await h.request({
      method: 'PUT',
      url: `/v1.3/managers/${a.userId}`,
      token: owner.access,
      payload: { available: true },
    });
    expect(byOwner.json().available).toBe(true);
  });
});

describe('assignment of new leads', () => {
  it('round robin shares leads in turn, once each, as lead.changed', async () => {
    await put({ mode: 'round_robin', employees: managers.map((m) => m.userId) });
    const leads = [];
    for (let i = 0; i < 6; i++) leads.push(await newLead());
    await worker.poll();
    const got = await Promise.all(leads.map(assignee));
    const ids = managers.map((m) => m.userId);
    expect(got).toEqual([...ids, ...ids]);
    const changed = await db()
      .selectFrom('events')
      .select(['lead_id', 'payload'])
      .where('type', '=', 'lead.changed')
      .where('lead_id', 'in', leads)
      .execute();
    expect(changed).toHaveLength(6);
    expect(JSON.parse(changed[0].payload ?? '{}').changes).toContain('userId');
  });

  it('an event read again assigns nothing twice (a second worker from the same place)', async () => {
    const lead = await newLead();
    const cursor = await db().selectFrom('automation_cursors').select('event_id').executeTakeFirstOrThrow();
    await worker.poll();
    const first = await assignee(lead);
    // The lead is unassigned by hand; a consumer resuming from the old place must not assign it again.
    await db().updateTable('leads').set({ user_id: null }).where('id', '=', lead).execute();
    await db().updateTable('automation_cursors').set({ event_id: cursor.event_id }).execute();
    const again = createAutomationWorker(h.services);
    await again.poll();
    await again.stop();
    expect(first).not.toBeNull();
    expect(await assignee(lead)).toBeNull();
  });

  it('skips an employee who is away; nobody available leaves the lead unassigned', async () => {
    const [a, b, c] = managers;
    await db().updateTable('users').set({ available: 0 }).where('id', '=', b.userId).execute();
    const leads = [await newLead(), await newLead(), await newLead()];
    await worker.poll();
    const got = await Promise.all(leads.map(assignee));
    expect(got).not.toContain(b.userId);
    expect(new Set(got)).toEqual(new Set([a.userId, c.userId]));
    await db().updateTable('users').set({ available: 0 }).where('id', 'in', [a.userId, c.userId]).execute();
    const lonely = await newLead();
    await worker.poll();
    expect(await assignee(lonely)).toBeNull();
    await db()
      .updateTable('users')
      .set({ available: 1 })
      .where(
        'id',
        'in',
        managers.map((m) => m.userId),
      )
      .execute();
  });

  it('least busy gives new leads to whoever has the fewest open leads', async () => {
    await put({ mode: 'least_busy', employees: managers.map((m) => m.userId) });
    const counts = async () => {
      const rows = await db()
        .selectFrom('leads')
        .select(['user_id', (eb) => eb.fn.countAll<number>().as('n')])
        .where('account_id', '=', owner.accountId)
        .where('status_type', 'in', ['inbox', 'active'])
        .where('user_id', 'is not', null)
        .groupBy('user_id')
        .execute();
      return new Map(rows.map((r) => [Number(r.user_id), Number(r.n)]));
    };
    // Closing the first manager's leads makes it the least busy by far.
    await db().updateTable('leads').set({ status_type: 'completed' }).where('user_id', '=', managers[0].userId).execute();
    const before = await counts();
    const gap = Math.min(before.get(managers[1].userId) ?? 0, before.get(managers[2].userId) ?? 0);
    expect(gap).toBeGreaterThanOrEqual(2);
    const leads = [];
    for (let i = 0; i < gap; i++) leads.push(await newLead());
    await worker.poll();
    expect(await Promise.all(leads.map(assignee))).toEqual(leads.map(() => managers[0].userId));
  });

  it('two consumers reading the same events at once (as two processes do): each lead assigned once, shares even', async () => {
    const { got, changes } = await nineLeadsTwoConsumers();
    expect(changes).toBe(9);
    for (const m of managers) expect(got.filter((u) => u === m.userId)).toHaveLength(3);
  });

  it('off: new leads wait unassigned', async () => {
    await put({ mode: 'off' });
    const lead = await newLead();
    await worker.poll();
    expect(await assignee(lead)).toBeNull();
  });
});

describe('new leads whose first message rules run for (assigned in the transaction of the runs on PostgreSQL)', () => {
  let rules: number[] = [];

  beforeAll(async () => {
    rules = [
      await postRule(h, owner, {
        event: 'message.incoming',
        conditions: [{ field: 'message.text', op: 'contains', value: 'hello' }],
        actions: [{ type: 'addTag', tag: 'greeted' }],
      }),
      await postRule(h, owner, {
        event: 'message.incoming',
        conditions: [{ field: 'message.text', op: 'contains', value: 'owner please' }],
        actions: [{ type: 'assign', userId: owner.userId }],
      }),
    ];
  });

  afterAll(async () => {
    for (const id of rules) await h.request({ method: 'DELETE', url: `/v1.3/automation/rules/${id}`, token: owner.access });
  });

  const tagsOf = async (leadId: number) =>
    (
      await db()
        .selectFrom('lead_tags as lt')
        .innerJoin('tags as t', 't.id', 'lt.tag_id')
        .select('t.tag')
        .where('lt.lead_id', '=', leadId)
        .execute()
    ).map((r) => r.tag);

  it('round robin shares them in turn, once each, with one lead.changed for the assignment and one for the tag', async () => {
    await put({ mode: 'round_robin', employees: managers.map((m) => m.userId) });
    const last = await db()
      .selectFrom('lead_distributions')
      .select('last_user_id')
      .where('integration_id', '=', integration.id)
      .executeTakeFirst();
    const leads = [];
    for (let i = 0; i < 6; i++) leads.push(await newLead());
    await worker.poll();
    const ids = managers.map((m) => m.userId);
    // The rotation goes on from where it stood, in lead order.
    const start = last?.last_user_id == null ? 0 : (ids.indexOf(last.last_user_id) + 1) % ids.length;
    const turn = [...ids.slice(start), ...ids.slice(0, start)];
    expect(await Promise.all(leads.map(assignee))).toEqual([...turn, ...turn]);
    for (const lead of leads) expect(await tagsOf(lead)).toEqual(['greeted']);
    const changed = await db()
      .selectFrom('events')
      .select(['lead_id', 'payload'])
      .where('type', '=', 'lead.changed')
      .where('lead_id', 'in', leads)
      .orderBy('id')
      .execute();
    const changes = (leadId: number) =>
      changed.filter((c) => Number(c.lead_id) === leadId).map((c) => (JSON.parse(c.payload ?? '{}') as { changes: string[] }).changes);
    for (const lead of leads) {
      const [assigned, tagged] = changes(lead);
      expect(changes(lead)).toHaveLength(2);
      expect(assigned).toContain('userId');
      expect(tagged).toEqual(['tags']);
    }
    const position = await db()
      .selectFrom('lead_distributions')
      .select('last_user_id')
      .where('integration_id', '=', integration.id)
      .executeTakeFirstOrThrow();
    expect(position.last_user_id).toBe(turn[turn.length - 1]);
  });

  it("a rule's assign acts after the distribution, and wins", async () => {
    const leadId = await newLead('hello, owner please');
    await worker.poll();
    expect(await assignee(leadId)).toBe(owner.userId);
    const changed = await db()
      .selectFrom('events')
      .select('payload')
      .where('type', '=', 'lead.changed')
      .where('lead_id', '=', leadId)
      .orderBy('id')
      .execute();
    const users = changed.map((c) => (JSON.parse(c.payload ?? '{}') as { lead: { userId?: number } }).lead.userId);
    expect(managers.map((m) => m.userId)).toContain(users[0]);
    expect(users[users.length - 1]).toBe(owner.userId);
  });

  it('least busy counts the leads it gives as it goes: the least busy first, then the others in turn', async () => {
    await put({ mode: 'least_busy', employees: managers.map((m) => m.userId) });
    // Open leads: none for the first manager, two for each of the others.
    await db().updateTable('leads').set({ status_type: 'completed' }).where('account_id', '=', owner.accountId).execute();
    for (const m of managers.slice(1)) {
      for (let i = 0; i < 2; i++) await createLead(h, owner.accountId, integration.id, { userId: m.userId, statusType: 'inbox' });
    }
    const leads = [];
    for (let i = 0; i < 6; i++) leads.push(await newLead());
    await worker.poll();
    const got = await Promise.all(leads.map(assignee));
    // The first two fill the gap; were the counts read once and not moved, all six would go to the first manager.
    expect(got.slice(0, 2)).toEqual([managers[0].userId, managers[0].userId]);
    const open = managers.map((m, i) => (i ? 2 : 0) + got.filter((u) => u === m.userId).length);
    expect(Math.max(...open) - Math.min(...open), `open leads ${open.join(', ')}`).toBeLessThanOrEqual(1);
    for (const lead of leads) expect(await tagsOf(lead)).toEqual(['greeted']);
  });

  it('two consumers reading the same events at once: each lead assigned and tagged once, shares even', async () => {
    const { leads, got, changes } = await nineLeadsTwoConsumers();
    for (const m of managers) expect(got.filter((u) => u === m.userId)).toHaveLength(3);
    // One assignment and one tag each.
    expect(changes).toBe(18);
    for (const lead of leads) expect(await tagsOf(lead)).toEqual(['greeted']);
  });
});
