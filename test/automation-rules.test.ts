import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntegrationRow, StatusRow } from '../src/db/schema.js';
import type { AutomationWorker } from '../src/automation/automation-worker.js';
import { createAutomationWorker } from '../src/automation/start.js';
import { tagsOfLeads } from '../src/domain/leads/leads.repo.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegrationRow, createManager, postRule, type ManagerFixture } from './helpers/fixtures.js';

/**
 * Automation rules (docs/api/automation.md): their bad input, each condition and action on
 * committed events read by the automation consumer, once per event, a run resumed after its
 * process stopped between two actions, a refused reply, and no loop between rules.
 */
let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let manager: ManagerFixture;
let integration: IntegrationRow;
let statuses: StatusRow[];
let worker: AutomationWorker;
let seq = 0;

const db = () => h.database.db.kysely;

async function incoming(text: string, customer = `c-${++seq}`): Promise<number> {
  const { leadId } = await h.services.ingest.ingest(integration, {
    externalId: `rule-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: customer, name: `Name ${customer}` },
    channel: { externalId: `chat-${customer}`, type: 'message' },
    text,
  });
  return leadId;
}

const createRule = (payload: Record<string, unknown>, token = owner.access) =>
  h.request({ method: 'POST', url: '/v1.3/automation/rules', token, payload });

const rule = (payload: Record<string, unknown>) => postRule(h, owner, payload);

async function disableAll(): Promise<void> {
  await db().updateTable('automation_rules').set({ enabled: 0 }).where('account_id', '=', owner.accountId).execute();
}

const tagsOf = async (leadId: number) => (await tagsOfLeads(db(), [leadId])).get(leadId) ?? [];
const notesOf = (leadId: number) => db().selectFrom('lead_notes').selectAll().where('lead_id', '=', leadId).execute();
const runsOf = async (id: number) =>
  (await h.request({ method: 'GET', url: `/v1.3/automation/rules/${id}/runs`, token: owner.access })).json().runs;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = await h.signUp();
  manager = await createManager(h, owner);
  integration = await createIntegrationRow(h, owner.accountId);
  statuses = await db().selectFrom('statuses').selectAll().where('account_id', '=', owner.accountId).orderBy('id').execute();
  worker = createAutomationWorker(h.services);
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await h.close();
});

describe('bad input: 400 with the path of the bad part, nothing stored', () => {
  it('refuses each bad part', async () => {
    const otherStatus = await db().selectFrom('statuses').select('id').where('account_id', '=', other.accountId).executeTakeFirstOrThrow();
    const unconfirmed = await db()
      .insertInto('users')
      .values({
        account_id: owner.accountId,
        login: `pending-${seq++}@example.com`,
        name: null,
        password_hash: null,
        role: 'manager',
        confirmed: 0,
        created_at: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const ok = { name: 'r', event: 'message.incoming', actions: [{ type: 'addTag', tag: 'x' }] };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...ok, event: 'message.outgoing' }, 'body.event'],
      [{ ...ok, conditions: [{ field: 'lead.amount', op: 'is', value: 1 }] }, 'body.conditions.0.field'],
      [{ ...ok, conditions: [{ field: 'message.text', op: 'equals', value: 'a' }] }, 'body.conditions.0.op'],
      [{ ...ok, conditions: [{ field: 'customer.isNew', op: 'is', value: 'yes' }] }, 'body.conditions.0.value'],
      [{ ...ok, conditions: [{ field: 'integration.id', op: 'in', value: ['1'] }] }, 'body.conditions.0.value'],
      [{ ...ok, actions: [{ type: 'explode' }] }, 'body.actions.0.type'],
      [{ ...ok, actions: [{ type: 'setStatus', statusId: otherStatus.id }] }, 'body.actions.0.statusId'],
      [{ ...ok, actions: [{ type: 'assign', userId: other.userId }] }, 'body.actions.0.userId'],
      [{ ...ok, actions: [{ type: 'assign', userId: unconfirmed.id }] }, 'body.actions.0.userId'],
      [{ ...ok, conditions: [{ field: 'message.text', op: 'matches', value: 'a'.repeat(201) }] }, 'body.conditions.0.value'],
      [{ ...ok, conditions: [{ field: 'message.text', op: 'matches', value: '(a+)+$' }] }, 'body.conditions.0.value'],
      [{ ...ok, conditions: [{ field: 'message.text', op: 'matches', value: '([a-z' }] }, 'body.conditions.0.value'],
      [{ ...ok, event: 'lead.idle' }, 'body.idleMinutes'],
    ];
    for (const [body, path] of cases) {
      const res = await createRule(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(
        res.json().details.map((d: { path: string }) => d.path),
        JSON.stringify(body),
      ).toContain(path);
    }
    expect(await db().selectFrom('automation_rules').selectAll().execute()).toEqual([]);
  });

  it('at most 100 rules per account', async () => {
    const base = { name: 'many', event: 'lead.created', enabled: false, actions: [{ type: 'addTag', tag: 'x' }] };
    for (let i = 0; i < 100; i++) expect((await createRule(base)).statusCode).toBe(200);
    const over = await createRule(base);
    expect(over.statusCode).toBe(400);
    expect(over.json().details[0].path).toBe('body');
    const list = await h.request({ method: 'GET', url: '/v1.3/automation/rules', token: owner.access });
    expect(list.json()).toHaveLength(100);
    await db().deleteFrom('automation_rules').where('account_id', '=', owner.accountId).execute();
  });

  it("is the owner's: a manager 403, another account's rule 404", async () => {
    const id = await rule({ event: 'lead.created', enabled: false, actions: [{ type: 'addTag', tag: 'x' }] });
    expect(
      (await createRule({ name: 'r', event: 'lead.created', actions: [{ type: 'addTag', tag: 'x' }] }, manager.access)).statusCode,
    ).toBe(403);
    expect((await h.request({ method: 'GET', url: `/v1.3/automation/rules/${id}`, token: other.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/automation/rules/${id}`, token: other.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/automation/rules/${id}`, token: owner.access })).statusCode).toBe(200);
  });
});

describe('running rules', () => {
  it('conditions: contains, matches, integration, status, tags, new customer, working hours', async () => {
    await disableAll();
    const tagIf = (tag: string, conditions: unknown[]) =>
      rule({ event: 'message.incoming', conditions, actions: [{ type: 'addTag', tag }] });
    await tagIf('contains', [{ field: 'message.text', op: 'contains', value: 'PRICE' }]);
    await tagIf('matches', [{ field: 'message.text', op: 'matches', value: '^order #\\d+$' }]);
    await tagIf('integration', [
      { field: 'integration.id', op: 'in', value: [integration.id] },
      { field: 'integration.type', op: 'in', value: ['widget'] },
    ]);
    await tagIf('other-integration', [{ field: 'integration.type', op: 'in', value: ['telegram'] }]);
    await tagIf('inbox', [{ field: 'lead.statusId', op: 'in', value: [null] }]);
    await tagIf('new', [{ field: 'customer.isNew', op: 'is', value: true }]);
    await tagIf('returning', [{ field: 'customer.isNew', op: 'is', value: false }]);
    await tagIf('tagged', [{ field: 'lead.tags', op: 'includes', value: 'vip' }]);
    await tagIf('after-hours', [{ field: 'time.workingHours', op: 'is', value: false }]);
    // Closed all week.
    await h.request({ method: 'PUT', url: '/v1.3/account/working-hours', token: owner.access, payload: { timezone: 'UTC', week: {} } });
    const lead = await incoming('What is the price?', 'cond-1');
    await worker.poll();
    expect((await tagsOf(lead)).sort()).toEqual(['after-hours', 'contains', 'inbox', 'integration', 'new']);
    expect(await tagsOf(lead)).not.toContain('tagged');
    await h.services.leads.addTag(
      { accountId: owner.accountId, userId: owner.userId, role: 'owner', typ: 'access', user: {} as never },
      lead,
      'vip',
    );
    // The customer's second message: no longer a new customer; the lead now carries "vip".
    const second = await incoming('order #42', 'cond-1');
    expect(second).toBe(lead);
    await worker.poll();
    expect(await tagsOf(lead)).toEqual(expect.arrayContaining(['matches', 'returning', 'tagged']));
  });

  it('actions in order: assign, setStatus, addTag, removeTag, note, with the text filled in', async () => {
    await disableAll();
    const active = statuses.find((s) => s.type === 'active')!;
    const id = await rule({
      event: 'lead.created',
      actions: [
        { type: 'assign', userId: manager.userId },
        { type: 'setStatus', statusId: active.id },
        { type: 'addTag', tag: 'first' },
        { type: 'addTag', tag: 'second' },
        { type: 'removeTag', tag: 'first' },
        { type: 'note', text: 'Lead {lead.id} of {customer.name}' },
      ],
    });
    const lead = await incoming('hi', 'act-1');
    await worker.poll();
    const row = await db().selectFrom('leads').selectAll().where('id', '=', lead).executeTakeFirstOrThrow();
    expect(row.user_id).toBe(manager.userId);
    expect(row.status_id).toBe(active.id);
    expect(await tagsOf(lead)).toEqual(['second']);
    expect((await notesOf(lead)).map((n) => n.text)).toEqual([`Lead ${lead} of Name act-1`]);
    const runs = await runsOf(id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      leadId: lead,
      actions: [{ type: 'assign', ok: true }, { type: 'setStatus', ok: true }, {}, {}, {}, { type: 'note', ok: true }],
    });
  });

  it('a reply the channel refuses is logged in the run and the next action still happens', async () => {
    await disableAll();
    const id = await rule({
      event: 'message.incoming',
      actions: [
        { type: 'reply', text: 'Hello {customer.name}' },
        { type: 'addTag', tag: 'after-reply' },
      ],
    });
    // A widget lead without a visitor session: the widget channel has nobody to deliver to.
    const lead = await incoming('hello', 'reply-1');
    await worker.poll();
    const [run] = await runsOf(id);
    expect(run.actions[0]).toMatchObject({ type: 'reply', ok: false });
    expect(run.actions[0].error).toBeTruthy();
    expect(run.actions[1]).toEqual({ type: 'addTag', ok: true });
    expect(await tagsOf(lead)).toContain('after-reply');
  });

  it('runs once per event when the events are read again', async () => {
    await disableAll();
    const id = await rule({ event: 'message.incoming', actions: [{ type: 'note', text: 'once' }] });
    const cursor = await db().selectFrom('automation_cursors').select('event_id').executeTakeFirstOrThrow();
    const lead = await incoming('hello', 'once-1');
    await worker.poll();
    await db().updateTable('automation_cursors').set({ event_id: cursor.event_id }).execute();
    const again = createAutomationWorker(h.services);
    await again.poll();
    await again.stop();
    expect(await notesOf(lead)).toHaveLength(1);
    expect(await runsOf(id)).toHaveLength(1);
  });

  it('a run cut short between two actions resumes with the second, once its lease has passed', async () => {
    await disableAll();
    const id = await rule({
      event: 'message.incoming',
      actions: [
        { type: 'note', text: 'step one' },
        { type: 'note', text: 'step two' },
      ],
    });
    const lead = await incoming('hello', 'crash-1');
    const event = await db()
      .selectFrom('events')
      .select('id')
      .where('lead_id', '=', lead)
      .where('type', '=', 'message.incoming')
      .executeTakeFirstOrThrow();
    // What a process killed after the first action's commit leaves: the note and a run that says so.
    await db()
      .insertInto('lead_notes')
      .values({ account_id: owner.accountId, lead_id: lead, user_id: null, text: 'step one', mentions: '[]', created_at: h.clock.now() })
      .execute();
    await db()
      .insertInto('automation_runs')
      .values({
        rule_id: id,
        event_id: event.id,
        lead_id: lead,
        at: h.clock.now(),
        results: JSON.stringify([{ type: 'note', ok: true }]),
        done: 0,
        claimed_until: h.clock.now() + 60_000,
      })
      .execute();
    await worker.poll();
    // Still leased by the dead process: nothing more yet.
    expect((await notesOf(lead)).map((n) => n.text)).toEqual(['step one']);
    h.clock.advance(61_000);
    await worker.poll();
    expect((await notesOf(lead)).map((n) => n.text)).toEqual(['step one', 'step two']);
    const [run] = await runsOf(id);
    expect(run.actions).toHaveLength(2);
  });

  it("no loop: events a rule's actions cause set off no rule", async () => {
    await disableAll();
    const [a, b] = statuses.filter((s) => s.type === 'active');
    const toB = await rule({
      event: 'lead.changed.status',
      conditions: [{ field: 'lead.statusId', op: 'in', value: [a.id] }],
      actions: [{ type: 'setStatus', statusId: b.id }],
    });
    const toA = await rule({
      event: 'lead.changed.status',
      conditions: [{ field: 'lead.statusId', op: 'in', value: [b.id] }],
      actions: [{ type: 'setStatus', statusId: a.id }],
    });
    const lead = await incoming('hello', 'loop-1');
    const moved = await h.request({ method: 'PUT', url: `/v1.3/leads/${lead}`, token: owner.access, payload: { statusId: a.id } });
    expect(moved.statusCode, moved.body).toBe(200);
    for (let i = 0; i < 4; i++) await worker.poll();
    const row = await db().selectFrom('leads').select('status_id').where('id', '=', lead).executeTakeFirstOrThrow();
    expect(row.status_id).toBe(b.id);
    expect(await runsOf(toB)).toHaveLength(1);
    expect(await runsOf(toA)).toHaveLength(0);
  });
});

describe('retention', () => {
  it('runs older than the event retention are pruned with the events', async () => {
    const id = await rule({ event: 'message.incoming', actions: [{ type: 'addTag', tag: 'kept' }] });
    await incoming('hello', 'prune-1');
    await worker.poll();
    expect(await runsOf(id)).toHaveLength(1);
    h.clock.advance((h.config.eventRetentionDays + 1) * 86_400_000);
    const { HistoryPruner } = await import('../src/events/retention.js');
    await new HistoryPruner(h.services.deps, h.services.leases).runOnce();
    expect(await db().selectFrom('automation_runs').selectAll().where('rule_id', '=', id).execute()).toEqual([]);
  });
});

describe('lead.idle', () => {
  it('auto-close: a lead quiet for the rule’s minutes moves to a completed status, once per quiet spell', async () => {
    await disableAll();
    // The clock moved past the owner's token in the test before: sign in again.
    const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
    owner.access = login.json().accessToken.token;
    const completed = statuses.find((s) => s.type === 'completed')!;
    const id = await rule({ event: 'lead.idle', idleMinutes: 60, actions: [{ type: 'setStatus', statusId: completed.id }] });
    const quiet = await incoming('hello', 'idle-1');
    await worker.poll();
    expect((await db().selectFrom('leads').select('status_id').where('id', '=', quiet).executeTakeFirstOrThrow()).status_id).toBeNull();
    h.clock.advance(61 * 60_000);
    await worker.poll();
    await worker.poll();
    expect((await db().selectFrom('leads').select('status_id').where('id', '=', quiet).executeTakeFirstOrThrow()).status_id).toBe(
      completed.id,
    );
    const runs = () => db().selectFrom('automation_runs').selectAll().where('rule_id', '=', id).execute();
    // Every quiet open lead of the account (the earlier tests' too) was swept, each once.
    const first = await runs();
    expect(first.filter((r) => r.lead_id === quiet)).toHaveLength(1);
    h.clock.advance(61 * 60_000);
    await worker.poll();
    expect(await runs()).toHaveLength(first.length);
  });
});
