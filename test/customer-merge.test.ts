import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type LeadFixture } from './helpers/fixtures.js';

// docs/api/resources.md "Customers with the same phone, and merging them (v1.3)".

let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let widget: number;
let whatsapp: number;
beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = await h.signUp();
  widget = await createIntegration(h, owner.accountId, 'widget');
  whatsapp = await createIntegration(h, owner.accountId, 'msgra');
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

const samePhone = (token: string, id: number) => h.request({ method: 'GET', url: `/v1.3/customers/${id}/same-phone`, token });
const merge = (token: string, id: number, payload: unknown) =>
  h.request({ method: 'POST', url: `/v1.3/customers/${id}/merge`, token, payload: payload as object });
const put = (token: string, id: number, payload: object) => h.request({ method: 'PUT', url: `/v1.3/customers/${id}`, token, payload });

async function withPhone(integrationId: number, phone: string, opts: Parameters<typeof createLead>[3] = {}): Promise<LeadFixture> {
  const lead = await createLead(h, owner.accountId, integrationId, opts);
  expect((await put(owner.access, lead.customerId, { phone })).statusCode).toBe(200);
  return lead;
}

/** Everything a merge may write. */
async function snapshot() {
  return {
    customers: await db().selectFrom('customers').selectAll().orderBy('id').execute(),
    profiles: await db().selectFrom('profiles').selectAll().orderBy('id').execute(),
    sources: await db().selectFrom('sources').selectAll().orderBy('id').execute(),
    leads: await db().selectFrom('leads').selectAll().orderBy('id').execute(),
    events: await db().selectFrom('events').selectAll().orderBy('id').execute(),
  };
}

describe('customers with the same phone', () => {
  it('lists the other customers whose phone is the same number typed in another form, never the customer itself', async () => {
    const a = await withPhone(widget, '8 (916) 700-00-01');
    const b = await withPhone(whatsapp, '+7 916 700 00 01');
    const c = await withPhone(widget, '79167000002');
    await db().updateTable('customers').set({ name: 'Сергей' }).where('id', '=', b.customerId).execute();

    const res = await samePhone(owner.access, a.customerId);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ customers: [{ id: b.customerId, name: 'Сергей', phone: '+79167000001' }] });
    expect((await samePhone(owner.access, c.customerId)).json()).toEqual({ customers: [] });
  });

  it('is empty for a customer without a phone, 404 for another account and never offered in v1.2', async () => {
    const lead = await createLead(h, owner.accountId, widget);
    expect((await samePhone(owner.access, lead.customerId)).json()).toEqual({ customers: [] });
    expect((await samePhone(other.access, lead.customerId)).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/v1.2/customers/${lead.customerId}/same-phone`, token: owner.access })).statusCode).toBe(
      404,
    );
  });

  it('a restricted manager is shown only the customers whose leads it sees', async () => {
    const manager = await createManager(h, owner, { sources: [widget] });
    const mine = await withPhone(widget, '+79167000003', { userId: manager.userId });
    const hidden = await withPhone(whatsapp, '89167000003');
    const seen = await withPhone(widget, '9167000003', { userId: manager.userId });
    expect((await samePhone(owner.access, mine.customerId)).json().customers.map((c: { id: number }) => c.id)).toEqual([
      hidden.customerId,
      seen.customerId,
    ]);
    expect((await samePhone(manager.access, mine.customerId)).json().customers.map((c: { id: number }) => c.id)).toEqual([seen.customerId]);
  });
});

describe('POST /v1.3/customers/<id>/merge', () => {
  it("moves the other's profiles, channels and leads, keeps the target's fields, fills its empty ones, deletes the other", async () => {
    const into = await withPhone(widget, '+79167000010');
    const from = await withPhone(whatsapp, '89167000010');
    const second = await createLead(h, owner.accountId, whatsapp);
    // The second lead's customer is folded into `from` first, so `from` has two leads.
    await db().updateTable('leads').set({ customer_id: from.customerId }).where('id', '=', second.leadId).execute();
    await db()
      .updateTable('customers')
      .set({ name: 'Ольга', email: 'olga@example.com', address: 'Химки' })
      .where('id', '=', from.customerId)
      .execute();
    await db().updateTable('customers').set({ name: 'Ольга Петрова', email: null }).where('id', '=', into.customerId).execute();
    const lastEvent =
      (
        await db()
          .selectFrom('events')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirst()
      )?.id ?? 0;

    const res = await merge(owner.access, into.customerId, { from: from.customerId });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      id: into.customerId,
      name: 'Ольга Петрова',
      email: 'olga@example.com',
      address: 'Химки',
      phone: '+79167000010',
    });
    expect(body.profiles.map((p: { id: number }) => p.id).sort()).toEqual([into.profileId, from.profileId].sort());

    expect(await db().selectFrom('customers').select('id').where('id', '=', from.customerId).executeTakeFirst()).toBeUndefined();
    const leads = await db().selectFrom('leads').select(['id', 'customer_id']).where('id', 'in', [from.leadId, second.leadId]).execute();
    expect(leads.every((l) => l.customer_id === into.customerId)).toBe(true);
    const source = await db().selectFrom('sources').select('customer_id').where('id', '=', from.sourceId).executeTakeFirstOrThrow();
    expect(source.customer_id).toBe(into.customerId);

    const events = await db()
      .selectFrom('events')
      .select(['type', 'payload'])
      .where('account_id', '=', owner.accountId)
      .where('id', '>', Number(lastEvent))
      .orderBy('id')
      .execute();
    const recorded = events.map((e) => ({ type: e.type, payload: JSON.parse(e.payload) }));
    expect(recorded.map((e) => e.type)).toEqual(['lead.changed', 'lead.changed', 'customer.changed', 'customer.merged']);
    expect(recorded[0].payload).toMatchObject({ leadId: Math.min(from.leadId, second.leadId), changes: ['customerId'] });
    expect(recorded[0].payload.lead.customerId).toBe(into.customerId);
    expect(recorded[2].payload).toMatchObject({ customerId: into.customerId, customer: { email: 'olga@example.com' } });
    expect(recorded[3].payload).toMatchObject({ customerId: into.customerId, mergedCustomerId: from.customerId });

    // The lead that moved is found by the kept customer's lead filter.
    const list = await h.request({ method: 'GET', url: `/v1.3/leads?customer=${into.customerId}&ignore=true`, token: owner.access });
    expect(
      list
        .json()
        .map((l: { id: number }) => l.id)
        .sort(),
    ).toEqual([into.leadId, from.leadId, second.leadId].sort());
  });

  it('keeps a phone the target has and answers the merged customer with the other gone from the same-phone list', async () => {
    const into = await withPhone(widget, '+79167000020');
    const from = await withPhone(whatsapp, '+79167000020');
    expect((await samePhone(owner.access, into.customerId)).json().customers).toHaveLength(1);
    expect((await merge(owner.access, into.customerId, { from: from.customerId })).statusCode).toBe(200);
    expect((await samePhone(owner.access, into.customerId)).json()).toEqual({ customers: [] });
  });

  it('merging a customer into itself is 400 and changes nothing', async () => {
    const lead = await withPhone(widget, '+79167000030');
    const before = await snapshot();
    const res = await merge(owner.access, lead.customerId, { from: lead.customerId });
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(res.json())).toContain('body.from');
    expect(await snapshot()).toEqual(before);
  });

  it('bad bodies are 400 and change nothing', async () => {
    const lead = await withPhone(widget, '+79167000031');
    const before = await snapshot();
    for (const payload of [{}, { from: 'x' }, { from: 0 }, { from: -1 }, { from: 2 ** 64 }, { from: 1.5 }, { from: '1\u0000' }]) {
      expect((await merge(owner.access, lead.customerId, payload)).statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect((await merge(owner.access, Number.MAX_SAFE_INTEGER, { from: lead.customerId })).statusCode).toBe(404);
    expect(await snapshot()).toEqual(before);
  });

  it("another account's customer is 404 either way and nothing moves", async () => {
    const mine = await withPhone(widget, '+79167000040');
    const otherIntegration = await createIntegration(h, other.accountId, 'widget');
    const theirs = await createLead(h, other.accountId, otherIntegration);
    const before = await snapshot();
    expect((await merge(owner.access, mine.customerId, { from: theirs.customerId })).statusCode).toBe(404);
    expect((await merge(owner.access, theirs.customerId, { from: mine.customerId })).statusCode).toBe(404);
    expect((await merge(other.access, theirs.customerId, { from: mine.customerId })).statusCode).toBe(404);
    expect(await snapshot()).toEqual(before);
  });

  it('a restricted manager merges two customers it sees, and gets 404 for one it does not', async () => {
    const manager = await createManager(h, owner, { sources: [widget] });
    const a = await withPhone(widget, '+79167000050', { userId: manager.userId });
    const b = await withPhone(widget, '+79167000050', { userId: manager.userId });
    const hidden = await withPhone(whatsapp, '+79167000050');
    const before = await snapshot();
    expect((await merge(manager.access, a.customerId, { from: hidden.customerId })).statusCode).toBe(404);
    expect((await merge(manager.access, hidden.customerId, { from: a.customerId })).statusCode).toBe(404);
    expect(await snapshot()).toEqual(before);

    const res = await merge(manager.access, a.customerId, { from: b.customerId });
    expect(res.statusCode).toBe(200);
    const moved = await db().selectFrom('leads').select('customer_id').where('id', '=', b.leadId).executeTakeFirstOrThrow();
    expect(moved.customer_id).toBe(a.customerId);
  });
});
