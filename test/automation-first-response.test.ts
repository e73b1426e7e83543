import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationRow } from '../src/db/schema.js';
import type { AutomationWorker } from '../src/automation/automation-worker.js';
import { createAutomationWorker } from '../src/automation/start.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createIntegrationRow, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { FakeTelegram } from './helpers/fake-telegram.js';

/**
 * The first-response target (docs/api/automation.md "First-response target"): the setting, the
 * `overdue` filter and `awaitingSince` of the v1.3 lists, the one notification per wait on the
 * realtime stream (the responsible employee, or the owner for an unassigned lead), the reports'
 * share answered within it; and a rule's reply recorded as sent by automation, not by an employee.
 */
let h: Harness;
let tg: FakeTelegram;
let owner: SignedUp;
let manager: ManagerFixture;
let integration: IntegrationRow;
let worker: AutomationWorker;
let seq = 0;

const db = () => h.database.db.kysely;
const MIN = 60_000;

async function incoming(customer = `c-${++seq}`, into = integration): Promise<number> {
  const { leadId } = await h.services.ingest.ingest(into, {
    externalId: `fr-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: customer, name: `Name ${customer}` },
    channel: { externalId: customer, type: 'message' },
    text: 'hello',
  });
  return leadId;
}

const setTarget = (minutes: unknown, token = owner.access) =>
  h.request({ method: 'PUT', url: '/v1.3/account/first-response-target', token, payload: { minutes } });

const list = async (query: string, token = owner.access, version = 'v1.3') => {
  const res = await h.request({ method: 'GET', url: `/${version}/leads/all?limit=200&${query}`, token });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Array<{ id: number; awaitingSince?: number | null }>;
};

/** Signs the owner in again: the tests move the clock past an access token's hour. */
async function relogin(): Promise<void> {
  const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
  owner.access = login.json().accessToken.token;
  const again = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: manager.login, pass: 'manager password' } });
  manager.access = again.json().accessToken.token;
}

/** A realtime subscriber of the employee, collecting what the stream sends it. */
async function stream(token: string) {
  const got: Array<{ type: string; notification?: { kind: string; leadId: number; awaitingSince: number; targetMinutes: number } }> = [];
  const auth = await h.services.auth.authenticate(token);
  const end = await h.services.realtime.subscribe(auth, (m) => got.push(JSON.parse(m)));
  return { got, end, notified: () => got.filter((m) => m.type === 'notification').map((m) => m.notification!) };
}

beforeAll(async () => {
  tg = await FakeTelegram.start();
  h = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url } });
  owner = await h.signUp();
  manager = await createManager(h, owner, { allowAllDeals: true });
  integration = await createIntegrationRow(h, owner.accountId);
  worker = createAutomationWorker(h.services);
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await h.close();
  await tg.close();
});

describe('the setting', () => {
  it('is null until set; every employee reads it, only the owner sets it', async () => {
    const get = (token: string) => h.request({ method: 'GET', url: '/v1.3/account/first-response-target', token });
    expect((await get(owner.access)).json()).toEqual({ minutes: null });
    expect((await setTarget(15, manager.access)).statusCode).toBe(403);
    const set = await setTarget(15);
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({ minutes: 15 });
    expect((await get(manager.access)).json()).toEqual({ minutes: 15 });
    expect((await setTarget(null)).json()).toEqual({ minutes: null });
    expect((await get(owner.access)).json()).toEqual({ minutes: null });
  });

  it('bad values: 400 naming the field, nothing stored', async () => {
    await setTarget(30);
    for (const bad of [0, -5, 1.5, 'ten', 43_201, 1e20, true]) {
      const res = await setTarget(bad);
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expect(JSON.stringify(res.json().details), JSON.stringify(bad)).toContain('minutes');
    }
    const extra = await h.request({
      method: 'PUT',
      url: '/v1.3/account/first-response-target',
      token: owner.access,
      payload: { minutes: 5, hours: 1 },
    });
    expect(extra.statusCode).toBe(400);
    const row = await db().selectFrom('account_automation').selectAll().where('account_id', '=', owner.accountId).executeTakeFirstOrThrow();
    expect(row.first_response_minutes).toBe(30);
  });
});

describe('the lead lists', () => {
  it('`overdue` finds the open leads waiting longer than the target; v1.3 items carry `awaitingSince`', async () => {
    await setTarget(30);
    const waitingLong = await incoming();
    const since = h.clock.now();
    h.clock.advance(20 * MIN);
    const waitingShort = await incoming();
    const completed = await incoming();
    const done = await db()
      .selectFrom('statuses')
      .select('id')
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'completed')
      .executeTakeFirstOrThrow();
    await db().updateTable('leads').set({ status_id: done.id, status_type: 'completed' }).where('id', '=', completed).execute();
    h.clock.advance(15 * MIN);
    await relogin();

    const overdue = (await list('overdue=true')).map((l) => l.id);
    expect(overdue).toContain(waitingLong);
    expect(overdue).not.toContain(waitingShort);
    expect(overdue).not.toContain(completed);
    const rest = (await list('overdue=false')).map((l) => l.id);
    expect(rest).toContain(waitingShort);
    expect(rest).not.toContain(waitingLong);

    const item = (await list(`id=${waitingLong}`)).find((l) => l.id === waitingLong);
    expect(item?.awaitingSince).toBe(since);
    expect((await list('')).find((l) => l.id === waitingLong)?.awaitingSince).toBe(since);
    const older = await list('', owner.access, 'v1.2');
    expect(older.find((l) => l.id === waitingLong)).not.toHaveProperty('awaitingSince');

    const bad = await h.request({ method: 'GET', url: '/v1.3/leads/all?overdue=maybe', token: owner.access });
    expect(bad.statusCode).toBe(400);
    // Without a target nothing is overdue.
    await setTarget(null);
    expect(await list('overdue=true')).toEqual([]);
    await setTarget(30);
  });
});

describe('the notification', () => {
  it('reaches the responsible employee (the owner when unassigned) once per wait, however many processes sweep', async () => {
    await setTarget(10);
    await relogin();
    // The earlier tests' waiting leads are answered: only this test's leads wait.
    await db().updateTable('leads').set({ awaiting_since: null }).where('account_id', '=', owner.accountId).execute();
    const assigned = await incoming('assigned-customer');
    await db().updateTable('leads').set({ user_id: manager.userId }).where('id', '=', assigned).execute();
    const unassigned = await incoming();
    const since = h.clock.now();
    const mine = await stream(manager.access);
    const boss = await stream(owner.access);

    h.clock.advance(9 * MIN);
    await worker.poll();
    await h.services.realtime.poll();
    expect(mine.notified()).toEqual([]);

    h.clock.advance(2 * MIN);
    const second = createAutomationWorker(h.services);
    await Promise.all([worker.poll(), second.poll()]);
    await second.stop();
    await h.services.realtime.poll();
    expect(mine.notified()).toEqual([{ kind: 'firstResponseOverdue', leadId: assigned, awaitingSince: since, targetMinutes: 10 }]);
    expect(boss.notified()).toEqual([{ kind: 'firstResponseOverdue', leadId: unassigned, awaitingSince: since, targetMinutes: 10 }]);
    // No webhook-style event reaches the stream for it.
    expect(mine.got.filter((m) => m.type === 'event' && JSON.stringify(m).includes('overdue'))).toEqual([]);

    h.clock.advance(30 * MIN);
    await worker.poll();
    await h.services.realtime.poll();
    expect(mine.notified()).toHaveLength(1);
    expect(boss.notified()).toHaveLength(1);

    // An answer ends the wait; the customer's next message starts a new one, notified again.
    await db()
      .updateTable('leads')
      .set({ awaiting_since: null, response_time: 41 * MIN })
      .where('id', '=', assigned)
      .execute();
    const next = h.clock.now();
    expect(await incoming('assigned-customer')).toBe(assigned);
    h.clock.advance(11 * MIN);
    await worker.poll();
    await h.services.realtime.poll();
    expect(mine.notified().map((n) => n.awaitingSince)).toEqual([since, next]);
    mine.end();
    boss.end();
  });

  it('catch-up replays the notification to the employee it names, and to nobody else', async () => {
    const last = await db()
      .selectFrom('events')
      .select(({ fn }) => fn.max('id').as('id'))
      .executeTakeFirstOrThrow();
    const lead = await incoming();
    await db().updateTable('leads').set({ user_id: manager.userId }).where('id', '=', lead).execute();
    h.clock.advance(11 * MIN);
    await relogin();
    await worker.poll();
    const got: Array<{ type: string; notification?: { leadId: number } }> = [];
    const ownerGot: typeof got = [];
    const end = await h.services.realtime.subscribe(
      await h.services.auth.authenticate(manager.access),
      (m) => got.push(JSON.parse(m)),
      Number(last.id),
    );
    const endOwner = await h.services.realtime.subscribe(
      await h.services.auth.authenticate(owner.access),
      (m) => ownerGot.push(JSON.parse(m)),
      Number(last.id),
    );
    expect(got.filter((m) => m.type === 'notification').map((m) => m.notification!.leadId)).toEqual([lead]);
    expect(ownerGot.filter((m) => m.type === 'notification')).toEqual([]);
    end();
    endOwner();
  });
});

describe('reports', () => {
  it('statistics answer how many leads were answered within the target', async () => {
    const other = await h.signUp();
    const sa = await createIntegration(h, other.accountId);
    const into = await db().selectFrom('integrations').selectAll().where('id', '=', sa).executeTakeFirstOrThrow();
    const leads = [await incoming('r1', into), await incoming('r2', into), await incoming('r3', into)];
    const times = [5 * MIN, 20 * MIN, 40 * MIN];
    for (const [i, id] of leads.entries())
      await db().updateTable('leads').set({ response_time: times[i], awaiting_since: null }).where('id', '=', id).execute();
    const stats = async () => (await h.request({ method: 'GET', url: '/v1.3/leads/statistics', token: other.access })).json().responseTime;
    expect(await stats()).toEqual({ median: 20 * MIN, count: 3 });
    await setTarget(20, other.access);
    expect(await stats()).toEqual({ median: 20 * MIN, count: 3, withinTarget: 2 });
  });
});

describe('a rule reply is sent by automation', () => {
  it('stores no employee: history and the webhook event say `automation: true`, without `userId`', async () => {
    const bot = `${8100 + ++seq}:AAH-auto`;
    tg.addBot(bot, { id: 8100 + seq, username: `auto${seq}_bot`, first_name: 'Auto' });
    h.services.bots.wait = async () => {};
    const connected = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrb_bot', credentials: { token: bot } },
    });
    expect(connected.statusCode, connected.body).toBe(200);
    const tgIntegration = await db().selectFrom('integrations').selectAll().where('id', '=', connected.json().id).executeTakeFirstOrThrow();
    const rule = await h.request({
      method: 'POST',
      url: '/v1.3/automation/rules',
      token: owner.access,
      payload: {
        name: 'greet',
        event: 'message.incoming',
        conditions: [{ field: 'integration.id', op: 'in', value: [tgIntegration.id] }],
        actions: [{ type: 'reply', text: 'Hello {customer.name}' }],
      },
    });
    expect(rule.statusCode, rule.body).toBe(200);
    const chat = String(910_000 + seq);
    tg.chats.set(chat, { first_name: 'Ada' });
    const lead = await incoming(chat, tgIntegration);
    await worker.poll();
    const runs = await h.request({ method: 'GET', url: `/v1.3/automation/rules/${rule.json().id}/runs`, token: owner.access });
    expect(runs.json().runs[0].actions).toEqual([{ type: 'reply', ok: true }]);
    const { source_id: sourceId } = await db()
      .selectFrom('messages')
      .select('source_id')
      .where('lead_id', '=', lead)
      .executeTakeFirstOrThrow();
    const history = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${lead}/history/${sourceId}`,
      token: owner.access,
      payload: {},
    });
    expect(history.statusCode, history.body).toBe(200);
    const reply = history.json().messages.find((m: { incoming: boolean }) => !m.incoming);
    expect(reply.message.text).toBe(`Hello Name ${chat}`);
    expect(reply.sender.automation).toBe(true);
    expect(reply.sender).not.toHaveProperty('userId');
    const stored = await db()
      .selectFrom('messages')
      .select(['user_id', 'custom_id'])
      .where('lead_id', '=', lead)
      .where('incoming', '=', 0)
      .executeTakeFirstOrThrow();
    expect(stored.user_id).toBeNull();
    expect(stored.custom_id).toMatch(/^automation-/);
    const event = await db()
      .selectFrom('events')
      .select('payload')
      .where('lead_id', '=', lead)
      .where('type', '=', 'message.outgoing')
      .executeTakeFirstOrThrow();
    const payload = JSON.parse(event.payload);
    expect(JSON.stringify(payload)).toContain('"automation":true');
    expect(JSON.stringify(payload)).not.toContain(`"userId":${owner.userId}`);
  });
});
