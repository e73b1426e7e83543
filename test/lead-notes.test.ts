import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { resolveMentions } from '../src/domain/notes/mentions.js';

let h: Harness;
let owner: SignedUp;
let integration: number;
let ann: ManagerFixture;
let annLee: ManagerFixture;
let narrow: ManagerFixture;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000', PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
  owner = await h.signUp('boss@example.com', undefined, 'Olga Boss');
  integration = await createIntegration(h, owner.accountId);
  ann = await createManager(h, owner, { allowAllDeals: true });
  annLee = await createManager(h, owner, { allowAllDeals: true });
  narrow = await createManager(h, owner);
  const db = h.database.db.kysely;
  await db.updateTable('users').set({ name: 'Ann' }).where('id', '=', ann.userId).execute();
  await db.updateTable('users').set({ name: 'Ann Lee' }).where('id', '=', annLee.userId).execute();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const post = (id: number, payload: unknown, token = owner.access) =>
  h.request({ method: 'POST', url: `/v1.3/leads/${id}/notes`, token, payload: payload as object });
const get = (id: number, token = owner.access, v = 'v1.3') => h.request({ method: 'GET', url: `/${v}/leads/${id}/notes`, token });

describe('POST/GET /v1.3/leads/<id>/notes', () => {
  it('writes a note with resolved mentions, lists notes oldest first, and records lead.note.created', async () => {
    const { leadId } = await createLead(h, owner.accountId, integration, { userId: ann.userId, statusType: 'active' });
    const first = await post(leadId, { text: '  @ann lee please call, cc @Ann and @nobody; mail@Ann is no mention  ' });
    expect(first.statusCode).toBe(200);
    const note = first.json();
    expect(note).toMatchObject({
      leadId,
      userId: owner.userId,
      text: '@ann lee please call, cc @Ann and @nobody; mail@Ann is no mention',
      mentions: [annLee.userId, ann.userId],
      createdAt: new Date(h.clock.now()).toISOString(),
    });
    h.clock.advance(1000);
    const second = (await post(leadId, { text: `@${ann.login} done` }, ann.access)).json();
    expect(second).toMatchObject({ userId: ann.userId, mentions: [ann.userId] });

    const list = await get(leadId, ann.access);
    expect(list.statusCode).toBe(200);
    expect(list.json().map((n: { id: number }) => n.id)).toEqual([note.id, second.id]);

    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('lead_id', '=', leadId)
      .where('type', '=', 'lead.note.created')
      .orderBy('id')
      .execute();
    expect(events.map((e) => JSON.parse(e.payload))).toEqual([
      { type: 'lead.note.created', accountId: owner.accountId, leadId, note },
      { type: 'lead.note.created', accountId: owner.accountId, leadId, note: second },
    ]);
    // Notes never become messages: nothing is sent to the customer.
    const messages = await db().selectFrom('messages').select('id').where('lead_id', '=', leadId).execute();
    expect(messages).toHaveLength(0);
  });

  it('follows the lead visibility: a manager who cannot see the lead gets 404 and writes nothing', async () => {
    const { leadId } = await createLead(h, owner.accountId, integration, { userId: ann.userId, statusType: 'active' });
    expect((await get(leadId, narrow.access)).statusCode).toBe(404);
    expect((await post(leadId, { text: 'hello' }, narrow.access)).statusCode).toBe(404);
    const other = await h.signUp();
    expect((await get(leadId, other.access)).statusCode).toBe(404);
    expect(await db().selectFrom('lead_notes').select('id').where('lead_id', '=', leadId).execute()).toHaveLength(0);
  });

  it('refuses bad input with 400 and changes nothing; is a v1.3 extension only', async () => {
    const { leadId } = await createLead(h, owner.accountId, integration);
    for (const payload of [{}, { text: '' }, { text: '   \u0000 ' }, { text: 5 }, { text: 'x'.repeat(10_001) }]) {
      const res = await post(leadId, payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_failed' });
    }
    expect(await db().selectFrom('lead_notes').select('id').where('lead_id', '=', leadId).execute()).toHaveLength(0);
    // A NUL character is refused like everywhere in the API (docs/api/errors.md), not stored.
    expect((await post(leadId, { text: 'NUL\u0000 inside' })).statusCode).toBe(400);
    expect((await post(99_999_999, { text: 'x' })).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: '/v1.3/leads/abc/notes', token: owner.access })).statusCode).toBe(400);
    expect((await get(leadId, owner.access, 'v1.2')).statusCode).toBe(404);
  });

  it('is delivered only to webhooks whose events list names it', async () => {
    let n = 0;
    const make = async (events: string[] | null) => {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/webhooks',
        token: owner.access,
        payload: { url: `http://127.0.0.1:9/hook${++n}`, events },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().id as number;
    };
    const all = await make(null);
    const named = await make(['lead.note.created']);
    const others = await make(['lead.changed']);
    const { leadId } = await createLead(h, owner.accountId, integration);
    const note = (await post(leadId, { text: 'internal' })).json();
    const event = await db()
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'lead.note.created')
      .where('lead_id', '=', leadId)
      .executeTakeFirstOrThrow();
    const deliveries = await db().selectFrom('deliveries').select('webhook_id').where('event_id', '=', event.id).execute();
    expect(deliveries.map((d) => d.webhook_id)).toEqual([named]);
    expect(note.id).toBeGreaterThan(0);
    // The unfiltered webhook and the one listing other types got lead.created earlier, not the note.
    expect(
      await db().selectFrom('deliveries').select('id').where('webhook_id', 'in', [all, others]).where('event_id', '=', event.id).execute(),
    ).toEqual([]);
  });

  it('reaches the realtime stream of employees who see the lead, with the mentioned ids', async () => {
    const { leadId } = await createLead(h, owner.accountId, integration, { userId: ann.userId, statusType: 'active' });
    const received: Record<string, Record<string, unknown>> = {};
    const listen = async (token: string, key: string) =>
      h.services.realtime.subscribe(await h.services.auth.authenticate(token), (m) => {
        const msg = JSON.parse(m) as { type: string; event?: Record<string, unknown> & { type: string } };
        if (msg.event?.type === 'lead.note.created') received[key] = msg.event;
      });
    const stops = [await listen(ann.access, 'ann'), await listen(narrow.access, 'narrow')];
    const note = (await post(leadId, { text: '@Ann look' })).json();
    await h.services.realtime.poll();
    for (const stop of stops) stop();
    expect(received.ann).toMatchObject({ leadId, note: { id: note.id, mentions: [ann.userId] } });
    expect(received.narrow).toBeUndefined();
  });
});

describe('resolveMentions', () => {
  const staff = [
    { id: 1, name: 'Ann', login: 'ann@example.com' },
    { id: 2, name: 'Ann Lee', login: 'lee@example.com' },
    { id: 3, name: null, login: 'pending@example.com' },
  ];
  it('prefers the longest name, needs a boundary on both sides, and matches logins of pending employees', () => {
    expect(resolveMentions('@Ann Lee @ann', staff)).toEqual([2, 1]);
    expect(resolveMentions('@Annette @ann_x x@ann', staff)).toEqual([]);
    expect(resolveMentions('(@pending@example.com)', staff)).toEqual([3]);
  });
  it('only ever answers ids of the given employees, each once', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const ids = resolveMentions(text, staff);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect([1, 2, 3]).toContain(id);
      }),
    );
  });
});
