import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { statusesOf } from './helpers/leads-seed.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import type { IntegrationRow, StatusRow } from '../src/db/schema.js';

let h: Harness;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const leadRow = (id: number) => db().selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const eventsOf = async (accountId: number, after = 0) =>
  (await db().selectFrom('events').selectAll().where('account_id', '=', accountId).where('id', '>', after).orderBy('id').execute()).map(
    (e) => ({
      type: e.type,
      leadId: e.lead_id,
      payload: JSON.parse(e.payload),
    }),
  );
const lastEventId = async () =>
  Number(
    (
      await db()
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('m'))
        .executeTakeFirst()
    )?.m ?? 0,
  );

interface World {
  owner: SignedUp;
  integration: IntegrationRow;
  statuses: StatusRow[];
  byName: (name: string) => StatusRow;
}

async function world(type = 'widget'): Promise<World> {
  const owner = await h.signUp();
  const id = await createIntegration(h, owner.accountId, type);
  const integration = await db().selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const statuses = await statusesOf(h, owner.accountId);
  return { owner, integration, statuses, byName: (name) => statuses.find((s) => s.name === name)! };
}

let seq = 0;
function incoming(socialId: string, over: Partial<IncomingMessage> = {}): IncomingMessage {
  seq++;
  return {
    externalId: `e-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: `Customer ${socialId}` },
    channel: { externalId: `chat-${socialId}`, type: 'message' },
    text: `hello ${seq}`,
    ...over,
  };
}

const SINGLE_KEYS = [
  'id',
  'userId',
  'statusId',
  'read',
  'details',
  'amount',
  'responseTime',
  'customerId',
  'timestamp',
  'address',
  'ttn',
  'customData',
  'customFields',
  'paymentTypeId',
  'items',
].sort();

describe('GET /leads/<id>', () => {
  it('answers the single-lead shape, the same on every version', async () => {
    const w = await world();
    const r = await h.services.ingest.ingest(w.integration, incoming('ann', { datetime: Date.UTC(2026, 2, 1, 10, 0, 0, 123) }));
    const answers = [];
    for (const v of ['v1.1', 'v1.2', 'v1.3']) {
      const res = await h.request({ method: 'GET', url: `/${v}/leads/${r.leadId}`, token: w.owner.access });
      expect(res.statusCode).toBe(200);
      answers.push(res.json());
    }
    expect(Object.keys(answers[2]).sort()).toEqual(SINGLE_KEYS);
    expect(answers[0]).toEqual(answers[2]);
    expect(answers[1]).toEqual(answers[2]);
    const row = await leadRow(r.leadId);
    expect(answers[2]).toEqual({
      id: r.leadId,
      userId: null,
      statusId: null,
      read: false,
      details: '',
      amount: 0,
      responseTime: null,
      customerId: row.customer_id,
      timestamp: '2026-03-01T10:00:00.123Z',
      address: '',
      ttn: '',
      customData: '',
      customFields: '{}',
      paymentTypeId: null,
      items: [],
    });
  });

  it("another account's lead is 404; a non-integer id is 400 on v1.3 and 404 before", async () => {
    const w = await world();
    const other = await world();
    const { leadId } = await createLead(h, other.owner.accountId, other.integration.id);
    expect((await h.request({ method: 'GET', url: `/v1.3/leads/${leadId}`, token: w.owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/abc', token: w.owner.access })).statusCode).toBe(400);
    expect((await h.request({ method: 'GET', url: '/v1.2/leads/abc', token: w.owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: '/v1.1/leads/abc', token: w.owner.access })).json()).toMatchObject({ statusCode: 404 });
  });
});

describe('PUT /leads/<id>', () => {
  it('changes only the given fields; customFields object in, JSON string out; records lead.changed with the names', async () => {
    const w = await world();
    const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
    const payment = await db()
      .insertInto('payment_types')
      .values({ account_id: w.owner.accountId, title: 'Card' })
      .returning('id')
      .executeTakeFirstOrThrow();
    const before = await lastEventId();
    const customFields = { size: 'XL', qty: 3, color: { value: 'red', title: 'Colour' }, weight: { value: 1.5, title: 'Weight, kg' } };
    const items = [{ id: 7, title: 'Shoes', count: 2, link: 'https://shop.example/7', extra: { any: ['thing'] } }];
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: {
        details: 'call back',
        amount: 1500,
        address: '1 Main St',
        ttn: 'TTN-1',
        customData: '{"crm":1}',
        customFields,
        paymentTypeId: payment.id,
        items,
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(SINGLE_KEYS);
    expect(body).toMatchObject({
      details: 'call back',
      amount: 1500,
      address: '1 Main St',
      ttn: 'TTN-1',
      customData: '{"crm":1}',
      paymentTypeId: payment.id,
      items,
      statusId: null,
      userId: null,
    });
    expect(typeof body.customFields).toBe('string');
    expect(JSON.parse(body.customFields)).toEqual(customFields);
    expect((await h.request({ method: 'GET', url: `/v1.2/leads/${leadId}`, token: w.owner.access })).json()).toEqual(body);

    const events = await eventsOf(w.owner.accountId, before);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'lead.changed', leadId });
    expect(events[0].payload).toEqual({
      type: 'lead.changed',
      accountId: w.owner.accountId,
      leadId,
      changes: ['details', 'amount', 'address', 'ttn', 'customData', 'customFields', 'paymentTypeId', 'items'],
      lead: body,
    });

    // The same values again: nothing changes, nothing is recorded.
    const again = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: { details: 'call back', amount: 1500 },
    });
    expect(again.json()).toEqual(body);
    expect(await eventsOf(w.owner.accountId, before)).toHaveLength(1);

    // One field: only that one is named.
    const one = await h.request({ method: 'PUT', url: `/v1.1/leads/${leadId}`, token: w.owner.access, payload: { ttn: 'TTN-2' } });
    expect(one.json()).toMatchObject({ ttn: 'TTN-2', details: 'call back' });
    const last = (await eventsOf(w.owner.accountId, before)).at(-1)!;
    expect(last.payload.changes).toEqual(['ttn']);

    // Clearing the payment type.
    const cleared = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: { paymentTypeId: null },
    });
    expect(cleared.json().paymentTypeId).toBeNull();
  });

  it('statusId moves the lead, keeps status_type in sync, records lead.changed and lead.changed.status; null goes back to the inbox', async () => {
    const w = await world();
    const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
    const won = w.byName('Won');
    const before = await lastEventId();
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: { statusId: won.id, details: 'done' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ statusId: won.id, details: 'done' });
    expect(await leadRow(leadId)).toMatchObject({ status_id: won.id, status_type: 'completed' });
    let events = await eventsOf(w.owner.accountId, before);
    expect(events.map((e) => e.type)).toEqual(['lead.changed', 'lead.changed.status']);
    expect(events[0].payload.changes).toEqual(['statusId', 'details']);
    expect(events[1].payload).toEqual({
      type: 'lead.changed.status',
      accountId: w.owner.accountId,
      leadId,
      statusId: won.id,
      previousStatusId: null,
      lead: res.json(),
    });
    const completed = await h.request({ method: 'GET', url: '/v1.3/leads/completed', token: w.owner.access });
    expect(completed.json().map((l: { id: number }) => l.id)).toEqual([leadId]);

    const ignore = w.byName('Not a lead');
    await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}`, token: w.owner.access, payload: { statusId: ignore.id } });
    expect(await leadRow(leadId)).toMatchObject({ status_type: 'ignore' });
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/all', token: w.owner.access })).json()).toEqual([]);

    const mark = await lastEventId();
    const back = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}`, token: w.owner.access, payload: { statusId: null } });
    expect(back.json().statusId).toBeNull();
    expect(await leadRow(leadId)).toMatchObject({ status_id: null, status_type: 'inbox' });
    events = await eventsOf(w.owner.accountId, mark);
    expect(events.map((e) => e.type)).toEqual(['lead.changed', 'lead.changed.status']);
    expect(events[1].payload).toMatchObject({ statusId: null, previousStatusId: ignore.id });
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access })).json()).toHaveLength(1);
  });

  it('userId assigns any employee of the account; null unassigns', async () => {
    const w = await world();
    const manager = await createManager(h, w.owner);
    const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: { userId: manager.userId },
    });
    expect(res.json().userId).toBe(manager.userId);
    const none = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}`, token: w.owner.access, payload: { userId: null } });
    expect(none.json().userId).toBeNull();
    // No body at all (a JSON Content-Type with nothing after it), or unknown fields only: nothing changes.
    const before = await leadRow(leadId);
    const empty = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual(none.json());
    const extras = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}`,
      token: w.owner.access,
      payload: { id: 12345, foo: 'bar' },
    });
    expect(extras.json()).toEqual(none.json());
    expect(await leadRow(leadId)).toEqual(before);
  });

  describe('bad input: the documented error, nothing changed, nothing recorded', () => {
    let w: World;
    let other: World;
    beforeAll(async () => {
      w = await world();
      other = await world();
    });
    const cases: Array<[string, (w: World, other: World) => Promise<Record<string, unknown>>]> = [
      ['unknown statusId', async () => ({ statusId: 999_999 })],
      ["another account's statusId", async (_w, other) => ({ statusId: other.statuses[0].id })],
      ['unknown userId', async () => ({ userId: 999_999 })],
      ["another account's userId", async (_w, other) => ({ userId: other.owner.userId })],
      ['unknown paymentTypeId', async () => ({ paymentTypeId: 999_999 })],
      ['items without title', async () => ({ items: [{ count: 1 }] })],
      ['items without count', async () => ({ items: [{ title: 'x' }] })],
      ['items with a fractional count', async () => ({ items: [{ title: 'x', count: 1.5 }] })],
      ['items not an array', async () => ({ items: { title: 'x', count: 1 } })],
      ['customFields an array', async () => ({ customFields: ['a'] })],
      ['customFields a string', async () => ({ customFields: '{"a":1}' })],
      ['customFields with a boolean value', async () => ({ customFields: { a: true } })],
      ['customFields with an object without title', async () => ({ customFields: { a: { value: 'x' } } })],
      ['customFields with a nested object value', async () => ({ customFields: { a: { value: { deep: 1 }, title: 't' } } })],
      ['customFields with null', async () => ({ customFields: { a: null } })],
      ['amount as text', async () => ({ amount: '5' })],
      ['amount fractional', async () => ({ amount: 1.5 })],
      ['details a number', async () => ({ details: 5 })],
      ['details too long', async () => ({ details: 'x'.repeat(10_001) })],
      ['a valid field with an invalid one', async () => ({ details: 'changed', statusId: 999_999 })],
    ];
    for (const [label, make] of cases) {
      it(label, async () => {
        const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
        const rowBefore = await leadRow(leadId);
        const before = await lastEventId();
        for (const v of ['v1.2', 'v1.3']) {
          const res = await h.request({
            method: 'PUT',
            url: `/${v}/leads/${leadId}`,
            token: w.owner.access,
            payload: await make(w, other),
          });
          expect(res.statusCode, res.body).toBe(400);
          expect(res.json()).toMatchObject({ code: 'validation_failed', error: expect.any(String) });
        }
        expect(await leadRow(leadId)).toEqual(rowBefore);
        expect(await eventsOf(w.owner.accountId, before)).toEqual([]);
      });
    }

    it('v1.1 answers its own error body', async () => {
      const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
      const res = await h.request({ method: 'PUT', url: `/v1.1/leads/${leadId}`, token: w.owner.access, payload: { statusId: 999_999 } });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ statusCode: 400, message: expect.any(String) });
    });

    it("another account's lead is 404 and stays as it was", async () => {
      const { leadId } = await createLead(h, other.owner.accountId, other.integration.id);
      const rowBefore = await leadRow(leadId);
      const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}`, token: w.owner.access, payload: { details: 'mine now' } });
      expect(res.statusCode).toBe(404);
      expect(await leadRow(leadId)).toEqual(rowBefore);
    });
  });
});

describe('lifecycle through accept and PUT status', () => {
  it('inbox -> accept (first active status, assigned) -> completed -> a new message opens a new inbox lead', async () => {
    const w = await world();
    const manager = await createManager(h, w.owner);
    // Reorder: "In progress" first, so "first active" is decided by order, not by id.
    await db().updateTable('statuses').set({ position: 0 }).where('id', '=', w.byName('In progress').id).execute();
    const first = await h.services.ingest.ingest(w.integration, incoming('bob'));
    const inbox = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access });
    expect(inbox.json().map((l: { id: number }) => l.id)).toEqual([first.leadId]);

    const before = await lastEventId();
    const accepted = await h.request({
      method: 'PUT',
      url: `/v1.2/leads/${first.leadId}/accept`,
      token: manager.access,
      payload: { userID: manager.userId },
    });
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.json()).toMatchObject({ id: first.leadId, userId: manager.userId, statusId: w.byName('In progress').id });
    expect(await leadRow(first.leadId)).toMatchObject({ status_type: 'active' });
    const events = await eventsOf(w.owner.accountId, before);
    expect(events.map((e) => e.type)).toEqual(['lead.changed', 'lead.changed.status']);
    expect(events[0].payload.changes).toEqual(['userId', 'statusId']);
    expect(events[1].payload).toMatchObject({ leadId: first.leadId, statusId: w.byName('In progress').id, previousStatusId: null });
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access })).json()).toEqual([]);
    expect(
      (await h.request({ method: 'GET', url: '/v1.3/leads/active', token: w.owner.access })).json().map((l: { id: number }) => l.id),
    ).toEqual([first.leadId]);

    // Accepting again for the same employee changes nothing.
    const mark = await lastEventId();
    await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${first.leadId}/accept`,
      token: w.owner.access,
      payload: { userId: manager.userId },
    });
    expect(await eventsOf(w.owner.accountId, mark)).toEqual([]);

    // A message while active joins the lead.
    h.clock.advance(1000);
    expect((await h.services.ingest.ingest(w.integration, incoming('bob'))).leadId).toBe(first.leadId);

    // Won: archived; the next message opens a new inbox lead.
    await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${first.leadId}`,
      token: w.owner.access,
      payload: { statusId: w.byName('Won').id },
    });
    expect(
      (await h.request({ method: 'GET', url: '/v1.3/leads/completed', token: w.owner.access })).json().map((l: { id: number }) => l.id),
    ).toEqual([first.leadId]);
    h.clock.advance(1000);
    const next = await h.services.ingest.ingest(w.integration, incoming('bob'));
    expect(next.isNewLead).toBe(true);
    expect(
      (await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access })).json().map((l: { id: number }) => l.id),
    ).toEqual([next.leadId]);

    // Accepting a lead already in a status assigns it without moving it.
    const done = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${first.leadId}/accept`,
      token: w.owner.access,
      payload: { userId: w.owner.userId },
    });
    expect(done.json()).toMatchObject({ userId: w.owner.userId, statusId: w.byName('Won').id });
  });

  it('accept without any active status assigns and keeps the lead in the inbox', async () => {
    const w = await world();
    await db().deleteFrom('statuses').where('account_id', '=', w.owner.accountId).where('type', '=', 'active').execute();
    const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}/accept`,
      token: w.owner.access,
      payload: { userId: w.owner.userId },
    });
    expect(res.json()).toMatchObject({ userId: w.owner.userId, statusId: null });
  });

  it('accept: bad input is 400 and changes nothing', async () => {
    const w = await world();
    const other = await world();
    const { leadId } = await createLead(h, w.owner.accountId, w.integration.id);
    const rowBefore = await leadRow(leadId);
    for (const payload of [
      {},
      { userId: 999_999 },
      { userID: other.owner.userId },
      { userId: 'me' },
      { userId: w.owner.userId, userID: other.owner.userId },
    ]) {
      const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/accept`, token: w.owner.access, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect(await leadRow(leadId)).toEqual(rowBefore);
  });
});

describe('PUT /leads/<id>/read', () => {
  async function conversation() {
    const w = await world('msgrb_personal');
    const t = h.clock.now();
    const a = await h.services.ingest.ingest(w.integration, incoming('cid', { datetime: t }));
    await h.services.ingest.ingest(w.integration, incoming('cid', { datetime: t + 1, channel: { externalId: 'post-1', type: 'comment' } }));
    await h.services.ingest.ingest(w.integration, incoming('cid', { datetime: t + 2, channel: { externalId: 'post-1', type: 'comment' } }));
    return { w, leadId: a.leadId };
  }
  const unreadOf = async (leadId: number) =>
    (await db().selectFrom('messages').select(['unread']).where('lead_id', '=', leadId).orderBy('id').execute()).map((m) => m.unread);

  it('marks the listed channels read; read flips and lead.changed names it only then', async () => {
    const { w, leadId } = await conversation();
    const before = await lastEventId();
    const res = await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}/read`,
      token: w.owner.access,
      payload: { sources: [{ type: 'comment', saId: w.integration.id }] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().read).toBe(false);
    expect(await unreadOf(leadId)).toEqual([1, 0, 0]);
    expect((await leadRow(leadId)).unread_count).toBe(1);
    expect(await eventsOf(w.owner.accountId, before)).toEqual([]);
    const list = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access });
    expect(list.json()[0].message.unread).toBe(1);

    // A channel of another integration or type: nothing.
    await h.request({
      method: 'PUT',
      url: `/v1.3/leads/${leadId}/read`,
      token: w.owner.access,
      payload: {
        sources: [
          { type: 'message', saId: 999 },
          { type: 'video', saId: w.integration.id },
        ],
      },
    });
    expect(await unreadOf(leadId)).toEqual([1, 0, 0]);

    const all = await h.request({
      method: 'PUT',
      url: `/v1.2/leads/${leadId}/read`,
      token: w.owner.access,
      payload: { sources: [{ type: 'message', saId: w.integration.id }] },
    });
    expect(all.json().read).toBe(true);
    const events = await eventsOf(w.owner.accountId, before);
    expect(events.map((e) => e.type)).toEqual(['lead.changed']);
    expect(events[0].payload.changes).toEqual(['read']);
  });

  it('with no body (even with a JSON Content-Type), {} or empty sources, marks the whole lead read', async () => {
    for (const request of [{ headers: { 'content-type': 'application/json' } }, { payload: {} }, { payload: { sources: [] } }, {}]) {
      const { w, leadId } = await conversation();
      const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/read`, token: w.owner.access, ...request });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().read).toBe(true);
      expect(await unreadOf(leadId)).toEqual([0, 0, 0]);
      expect((await leadRow(leadId)).unread_count).toBe(0);
    }
  });

  it('PUT /v1.3/leads/<id>/unread makes the latest incoming message unread again (v1.3 only; nothing to do without one)', async () => {
    const { w, leadId } = await conversation();
    await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/read`, token: w.owner.access });
    const before = await lastEventId();
    const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/unread`, token: w.owner.access });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().read).toBe(false);
    expect(await unreadOf(leadId)).toEqual([0, 0, 1]);
    const events = await eventsOf(w.owner.accountId, before);
    expect(events.map((e) => [e.type, e.payload.changes])).toEqual([['lead.changed', ['read']]]);
    // Already unread: nothing changes, no event.
    await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/unread`, token: w.owner.access });
    expect(await eventsOf(w.owner.accountId, before)).toHaveLength(1);
    expect((await h.request({ method: 'PUT', url: `/v1.2/leads/${leadId}/unread`, token: w.owner.access })).statusCode).toBe(404);
    const other = await h.signUp();
    expect((await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/unread`, token: other.access })).statusCode).toBe(404);

    const quiet = await createLead(h, w.owner.accountId, w.integration.id);
    const none = await h.request({ method: 'PUT', url: `/v1.3/leads/${quiet.leadId}/unread`, token: w.owner.access });
    expect(none.json().read).toBe(true);
  });

  it('bad sources are 400 and change nothing', async () => {
    const { w, leadId } = await conversation();
    for (const payload of [{ sources: 'all' }, { sources: [{ type: 'message' }] }, { sources: [{ type: 'message', saId: 'x' }] }]) {
      const res = await h.request({ method: 'PUT', url: `/v1.3/leads/${leadId}/read`, token: w.owner.access, payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect(await unreadOf(leadId)).toEqual([1, 1, 1]);
  });
});

describe('POST /v1.3/leads', () => {
  it('creates a lead for an existing customer, in the inbox, with lead.created', async () => {
    const w = await world();
    const { customerId } = await createLead(h, w.owner.accountId, w.integration.id);
    const before = await lastEventId();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      token: w.owner.access,
      payload: {
        customerId,
        saId: w.integration.id,
        details: 'from the site',
        amount: 900,
        customFields: { src: 'form' },
        items: [{ title: 'Box', count: 1 }],
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const lead = res.json();
    expect(Object.keys(lead).sort()).toEqual(SINGLE_KEYS);
    expect(lead).toMatchObject({
      customerId,
      statusId: null,
      userId: null,
      details: 'from the site',
      amount: 900,
      customFields: '{"src":"form"}',
      read: true,
      timestamp: new Date(h.clock.now()).toISOString(),
    });
    const events = await eventsOf(w.owner.accountId, before);
    expect(events).toEqual([
      { type: 'lead.created', leadId: lead.id, payload: { type: 'lead.created', accountId: w.owner.accountId, leadId: lead.id, lead } },
    ]);
    const inbox = await h.request({ method: 'GET', url: '/v1.3/leads/inbox', token: w.owner.access });
    const item = inbox.json().find((l: { id: number }) => l.id === lead.id);
    expect(item.message).toBeNull();
    expect(item.socialAccount.id).toBe(w.integration.id);
  });

  it('creates a new customer too, with customer.created, in the given status', async () => {
    const w = await world();
    const before = await lastEventId();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      token: w.owner.access,
      payload: {
        customer: { name: 'Dana', phone: '+1 (555) 010-0200', email: 'dana@example.com', address: '5 Elm St' },
        saId: w.integration.id,
        statusId: w.byName('New').id,
        userId: w.owner.userId,
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const lead = res.json();
    expect(lead).toMatchObject({ statusId: w.byName('New').id, userId: w.owner.userId });
    expect(await leadRow(lead.id)).toMatchObject({ status_type: 'active' });
    const customer = await db().selectFrom('customers').selectAll().where('id', '=', lead.customerId).executeTakeFirstOrThrow();
    expect(customer).toMatchObject({
      account_id: w.owner.accountId,
      name: 'Dana',
      phone: '+15550100200',
      email: 'dana@example.com',
      address: '5 Elm St',
    });
    const events = await eventsOf(w.owner.accountId, before);
    expect(events.map((e) => e.type)).toEqual(['customer.created', 'lead.created']);
    expect(events[0].payload).toMatchObject({ customerId: customer.id, customer: { id: customer.id, name: 'Dana', profiles: [] } });
    const active = await h.request({ method: 'GET', url: '/v1.3/leads/active', token: w.owner.access });
    expect(active.json()[0].customer).toEqual({
      id: customer.id,
      login: '',
      name: 'Dana',
      avatar: '',
      email: 'dana@example.com',
      phone: '+15550100200',
    });
  });

  it('a manager becomes the assignee by default and sees its lead', async () => {
    const w = await world();
    const manager = await createManager(h, w.owner);
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      token: manager.access,
      payload: { customer: { name: 'Eve' }, saId: w.integration.id, statusId: w.byName('New').id },
    });
    expect(res.json().userId).toBe(manager.userId);
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/active', token: manager.access })).json()).toHaveLength(1);
  });

  it('bad input is 400 and creates nothing', async () => {
    const w = await world();
    const other = await world();
    const mine = await createLead(h, w.owner.accountId, w.integration.id);
    const theirs = await createLead(h, other.owner.accountId, other.integration.id);
    const noAccess = await createManager(h, w.owner, { sources: [null] });
    const cases: Array<[string, Record<string, unknown>, string?]> = [
      ['neither customer', { saId: w.integration.id }],
      ['both customers', { saId: w.integration.id, customerId: mine.customerId, customer: { name: 'X' } }],
      ['no saId', { customerId: mine.customerId }],
      ['unknown saId', { saId: 999_999, customerId: mine.customerId }],
      ["another account's integration", { saId: other.integration.id, customerId: mine.customerId }],
      ["another account's customer", { saId: w.integration.id, customerId: theirs.customerId }],
      ['unknown status', { saId: w.integration.id, customerId: mine.customerId, statusId: 999_999 }],
      ['bad phone', { saId: w.integration.id, customer: { name: 'X', phone: 'call me' } }],
      ['blank name', { saId: w.integration.id, customer: { name: '   ' } }],
      ['bad items', { saId: w.integration.id, customerId: mine.customerId, items: [{ title: 'x' }] }],
      ['integration out of reach', { saId: w.integration.id, customer: { name: 'X' } }, noAccess.access],
    ];
    const count = async () => ({
      leads: (await db().selectFrom('leads').select('id').where('account_id', '=', w.owner.accountId).execute()).length,
      customers: (await db().selectFrom('customers').select('id').where('account_id', '=', w.owner.accountId).execute()).length,
    });
    const before = await count();
    const mark = await lastEventId();
    for (const [label, payload, token] of cases) {
      const res = await h.request({ method: 'POST', url: '/v1.3/leads', token: token ?? w.owner.access, payload });
      expect(res.statusCode, `${label}: ${res.body}`).toBe(400);
    }
    expect(await count()).toEqual(before);
    expect(await eventsOf(w.owner.accountId, mark)).toEqual([]);
    expect(
      (
        await h.request({
          method: 'POST',
          url: '/v1.2/leads',
          token: w.owner.access,
          payload: { saId: w.integration.id, customer: { name: 'X' } },
        })
      ).statusCode,
    ).toBe(404);
  });
});
