import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationRow, LeadRow } from '../src/db/schema.js';
import type { AutomationWorker } from '../src/automation/automation-worker.js';
import { sweepOverdueLeads } from '../src/automation/first-response-sweep.js';
import { backfillRespondedAt } from '../src/db/migrations/0135-responded-at.js';
import { createAutomationWorker } from '../src/automation/start.js';
import type { OutgoingRecord } from '../src/domain/conversations/conversations.types.js';
import { storeSendsAtOnce, type OutgoingUnit } from '../src/domain/conversations/outgoing-batch.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration } from './helpers/fixtures.js';
import { DIALECT } from './helpers/database.js';
import { FakeTelegram } from './helpers/fake-telegram.js';

/**
 * The customer's wait and the response time (docs/api/automation.md "First-response target"): an
 * automation rule's reply ends neither, on every path that stores sends; the reports count the
 * response time in calendar or in working time; the overdue filter and sweep count working time
 * when the account has working hours.
 */
let h: Harness;
let tg: FakeTelegram;
let seq = 0;

const MIN = 60_000;
const HOUR = 60 * MIN;
const db = () => h.database.db.kysely;
/** A New York wall-clock time in November 2026 (UTC-5) as an instant; the 26th is Thanksgiving. */
const ny = (day: number, hour: number, minute = 0) => Date.UTC(2026, 10, day, hour + 5, minute);
const NEW_YORK = {
  timezone: 'America/New_York',
  week: {
    mon: [['09:00', '18:00']],
    tue: [['09:00', '18:00']],
    wed: [['09:00', '18:00']],
    thu: [['09:00', '18:00']],
    fri: [['09:00', '18:00']],
  },
  holidays: ['2026-11-26'],
};

beforeAll(async () => {
  tg = await FakeTelegram.start();
  h = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url, PARLEY_LOGIN_MAX_PER_IP: '100' } });
});
afterAll(async () => {
  await h.close();
  await tg.close();
});

async function account(): Promise<{ owner: SignedUp; integration: IntegrationRow }> {
  const owner = await h.signUp();
  const id = await createIntegration(h, owner.accountId);
  return { owner, integration: await db().selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow() };
}

/** A customer message at `at` on the integration: answers its lead's id and its channel. */
async function customerWrites(integration: IntegrationRow, at: number, who = `c-${++seq}`) {
  const { leadId } = await h.services.ingest.ingest(integration, {
    externalId: `in-${++seq}`,
    datetime: at,
    sender: { socialId: who, name: `Name ${who}` },
    channel: { externalId: who, type: 'message' },
    text: 'hello',
  });
  const source = await db()
    .selectFrom('sources')
    .selectAll()
    .where('integration_id', '=', integration.id)
    .where('external_id', '=', who)
    .executeTakeFirstOrThrow();
  return { leadId, source };
}

const out = (at: number, customId: string | null = null): OutgoingRecord => ({
  externalId: `out-${++seq}`,
  text: 'reply',
  attachments: [],
  replyTo: undefined,
  customId,
  at,
});
const lead = (id: number): Promise<LeadRow> => db().selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

const setTarget = (owner: SignedUp, minutes: number | null) =>
  h.request({ method: 'PUT', url: '/v1.3/account/first-response-target', token: owner.access, payload: { minutes } });
const setHours = (owner: SignedUp, hours: Record<string, unknown>) =>
  h.request({ method: 'PUT', url: '/v1.3/account/working-hours', token: owner.access, payload: hours });
async function relogin(owner: SignedUp): Promise<void> {
  const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
  owner.access = login.json().accessToken.token;
}
const statistics = async (owner: SignedUp, query = '') => {
  const res = await h.request({ method: 'GET', url: `/v1.3/leads/statistics?${query}`, token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const overdueIds = async (owner: SignedUp, overdue: boolean) => {
  const res = await h.request({ method: 'GET', url: `/v1.3/leads/all?overdue=${overdue}`, token: owner.access });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as Array<{ id: number }>).map((l) => l.id);
};

describe('an automation reply does not end the wait', () => {
  /** Each way a send is stored: alone, a batch in a transaction and, on PostgreSQL, the one statement. */
  const paths: Array<[string, (units: OutgoingUnit[]) => Promise<unknown>]> = [
    [
      'one send at a time',
      async (units) => {
        for (const u of units) await h.services.ingest.storeOutgoing(u);
      },
    ],
    [
      'a batch in a transaction',
      (units) =>
        db()
          .transaction()
          .execute((trx) => h.services.ingest.recordOutgoingBatch(trx, units)),
    ],
    ...(DIALECT === 'postgres'
      ? [
          ['one statement (parley_store_sends)', (units: OutgoingUnit[]) => storeSendsAtOnce(db(), units, h.clock.now())] as [
            string,
            (units: OutgoingUnit[]) => Promise<unknown>,
          ],
        ]
      : []),
  ];

  for (const [name, store] of paths) {
    it(`${name}: the wait goes on until an employee answers, who sets the response time`, async () => {
      const { owner, integration } = await account();
      const t0 = h.clock.now();
      const { leadId, source } = await customerWrites(integration, t0);
      const unit = (userId: number | null, records: OutgoingRecord[]): OutgoingUnit => ({ integration, source, leadId, userId, records });

      await store([unit(null, [out(t0 + MIN, 'automation-1-2-0')])]);
      expect(await lead(leadId)).toMatchObject({ awaiting_since: t0, response_time: null, responded_at: null, last_message_incoming: 0 });

      // A batch with an automation reply then an employee's: the employee's answer counts.
      await store([unit(null, [out(t0 + 2 * MIN, 'automation-1-3-0')]), unit(owner.userId, [out(t0 + 5 * MIN)])]);
      expect(await lead(leadId)).toMatchObject({ awaiting_since: null, response_time: 5 * MIN, responded_at: t0 + 5 * MIN });

      // The customer writes again; an employee's send whose customId merely looks like automation's answers.
      const t1 = t0 + 10 * MIN;
      await customerWrites(integration, t1, source.external_id);
      expect(await lead(leadId)).toMatchObject({ awaiting_since: t1, response_time: null });
      await store([unit(owner.userId, [out(t1 + 3 * MIN, 'automation-typed-by-hand')])]);
      expect(await lead(leadId)).toMatchObject({ awaiting_since: null, response_time: 3 * MIN, responded_at: t1 + 3 * MIN });
      // With nothing awaiting, an automation reply keeps the figures.
      await store([unit(null, [out(t1 + 4 * MIN, 'automation-1-4-0')])]);
      expect(await lead(leadId)).toMatchObject({ awaiting_since: null, response_time: 3 * MIN, responded_at: t1 + 3 * MIN });
    });
  }

  it('a rule’s away reply leaves the lead overdue, notified and unanswered in the reports', async () => {
    const { owner } = await account();
    const bot = `${8200 + ++seq}:AAH-away`;
    tg.addBot(bot, { id: 8200 + seq, username: `away${seq}_bot`, first_name: 'Away' });
    h.services.bots.wait = async () => {};
    const connected = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrb_bot', credentials: { token: bot } },
    });
    expect(connected.statusCode, connected.body).toBe(200);
    const integration = await db().selectFrom('integrations').selectAll().where('id', '=', connected.json().id).executeTakeFirstOrThrow();
    const rule = await h.request({
      method: 'POST',
      url: '/v1.3/automation/rules',
      token: owner.access,
      payload: { name: 'away', event: 'message.incoming', conditions: [], actions: [{ type: 'reply', text: 'We answer from 9:00' }] },
    });
    expect(rule.statusCode, rule.body).toBe(200);
    expect((await setTarget(owner, 10)).statusCode).toBe(200);
    const worker: AutomationWorker = createAutomationWorker(h.services);
    await worker.start();
    try {
      const chat = String(920_000 + seq);
      tg.chats.set(chat, { first_name: 'Ada' });
      const since = h.clock.now();
      const { leadId } = await customerWrites(integration, since, chat);
      await worker.poll();
      const replies = await db()
        .selectFrom('messages')
        .select('custom_id')
        .where('lead_id', '=', leadId)
        .where('incoming', '=', 0)
        .execute();
      expect(replies.map((r) => r.custom_id)).toEqual([expect.stringMatching(/^automation-/)]);
      expect((await lead(leadId)).awaiting_since).toBe(since);

      h.clock.advance(11 * MIN);
      await relogin(owner);
      expect(await overdueIds(owner, true)).toEqual([leadId]);
      await sweepOverdueLeads(h.services.deps);
      const overdue = await db()
        .selectFrom('events')
        .select('payload')
        .where('lead_id', '=', leadId)
        .where('type', '=', 'lead.response.overdue')
        .execute();
      expect(overdue.map((e) => JSON.parse(e.payload).awaitingSince)).toEqual([since]);
      expect((await statistics(owner)).responseTime).toEqual({ median: null, count: 0, withinTarget: 0 });

      // The employee answers: the wait ends, measured from the customer's message.
      const sent = await h.request({
        method: 'POST',
        url: `/v1.3/messaging/${leadId}/send`,
        token: owner.access,
        payload: { message: { text: 'Hi!' } },
      });
      expect(sent.statusCode, sent.body).toBe(200);
      expect(await overdueIds(owner, true)).toEqual([]);
      expect((await statistics(owner)).responseTime).toEqual({ median: 11 * MIN, count: 1, withinTarget: 0 });
    } finally {
      await worker.stop();
    }
  });
});

describe('leads answered before `responded_at` existed', () => {
  it('get the time of their first outgoing message after their latest incoming one', async () => {
    const { owner, integration } = await account();
    const t0 = h.clock.now();
    const { leadId, source } = await customerWrites(integration, t0);
    const send = (at: number) => h.services.ingest.storeOutgoing({ integration, source, leadId, userId: owner.userId, records: [out(at)] });
    await send(t0 + MIN);
    await customerWrites(integration, t0 + 2 * MIN, source.external_id);
    await send(t0 + 7 * MIN);
    await send(t0 + 9 * MIN);
    const waiting = await customerWrites(integration, t0, `c-${++seq}`);
    const before = await lead(leadId);
    expect(before).toMatchObject({ response_time: 5 * MIN, responded_at: t0 + 7 * MIN });
    await db().updateTable('leads').set({ responded_at: null }).where('id', 'in', [leadId, waiting.leadId]).execute();
    await backfillRespondedAt(db());
    expect(await lead(leadId)).toEqual(before);
    expect((await lead(waiting.leadId)).responded_at).toBeNull();
  });
});

describe('the response time in working time (`responseTimeIn=working`)', () => {
  /** Four waits in New York: a night, Thanksgiving, a weekend, and forty minutes of a Tuesday. */
  const waits: Array<[number, number]> = [
    [ny(24, 20), ny(25, 9, 30)],
    [ny(25, 17), ny(27, 10)],
    [ny(27, 17, 50), ny(30, 9, 10)],
    [ny(24, 10), ny(24, 10, 40)],
  ];

  async function answered(): Promise<SignedUp> {
    const { owner, integration } = await account();
    for (const [from, to] of waits) {
      const { leadId, source } = await customerWrites(integration, from);
      await h.services.ingest.storeOutgoing({ integration, source, leadId, userId: owner.userId, records: [out(to)] });
    }
    return owner;
  }

  it('counts each wait within the working hours, in their time zone, and applies the target to that', async () => {
    const owner = await answered();
    expect((await setTarget(owner, 35)).statusCode).toBe(200);
    const calendar = { median: (13.5 * HOUR + 41 * HOUR) / 2, count: 4, withinTarget: 0 };
    // Without working hours both answers are the calendar's.
    expect((await statistics(owner)).responseTime).toEqual(calendar);
    expect((await statistics(owner, 'responseTimeIn=working')).responseTime).toEqual(calendar);

    expect((await setHours(owner, NEW_YORK)).statusCode).toBe(200);
    expect((await statistics(owner, 'responseTimeIn=calendar')).responseTime).toEqual(calendar);
    // 30 min, 2 h, 20 min and 40 min: the median between 30 and 40; two within 35 minutes.
    const working = await statistics(owner, 'responseTimeIn=working&breakdowns=true');
    expect(working.responseTime).toEqual({ median: 35 * MIN, count: 4, withinTarget: 2 });
    expect(working.channels).toEqual([{ type: 'widget', count: 4, responseTime: { median: 35 * MIN, count: 4 } }]);
    expect(working.employees).toEqual([{ userId: null, count: 4, responseTime: { median: 35 * MIN, count: 4 } }]);
    const byCalendar = await statistics(owner, 'breakdowns=true');
    expect(byCalendar.channels[0].responseTime.median).toBe(calendar.median);
  });

  it('a bad value is 400 naming the parameter', async () => {
    const { owner } = await account();
    for (const bad of ['business', '', 'WORKING']) {
      const res = await h.request({ method: 'GET', url: `/v1.3/leads/statistics?responseTimeIn=${bad}`, token: owner.access });
      expect(res.statusCode, bad).toBe(400);
      expect(JSON.stringify(res.json()), bad).toContain('responseTimeIn');
    }
  });
});

describe('overdue in working time', () => {
  it('a lead written at night is overdue once the target has passed in working time', async () => {
    h.clock.set(ny(24, 2));
    const { owner, integration } = await account();
    expect((await setTarget(owner, 30)).statusCode).toBe(200);
    expect((await setHours(owner, NEW_YORK)).statusCode).toBe(200);
    const { leadId } = await customerWrites(integration, h.clock.now());
    const notified = async () => {
      await sweepOverdueLeads(h.services.deps);
      const rows = await db()
        .selectFrom('events')
        .select('id')
        .where('lead_id', '=', leadId)
        .where('type', '=', 'lead.response.overdue')
        .execute();
      return rows.length;
    };

    // Seven hours later, at 09:29, only 29 working minutes have passed.
    h.clock.set(ny(24, 9, 29));
    await relogin(owner);
    expect(await overdueIds(owner, true)).toEqual([]);
    expect(await overdueIds(owner, false)).toEqual([leadId]);
    expect(await notified()).toBe(0);

    h.clock.set(ny(24, 9, 30));
    expect(await overdueIds(owner, true)).toEqual([leadId]);
    expect(await notified()).toBe(1);
    expect(await notified()).toBe(1);

    // Closed all week: no working time passes, so nothing is overdue.
    expect((await setHours(owner, { timezone: 'UTC', week: {} })).statusCode).toBe(200);
    expect(await overdueIds(owner, true)).toEqual([]);
    // Without working hours (open around the clock), calendar time again.
    await db().updateTable('account_automation').set({ working_hours: null }).where('account_id', '=', owner.accountId).execute();
    expect(await overdueIds(owner, true)).toEqual([leadId]);
  });
});
