import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager, type LeadFixture, type ManagerFixture } from './helpers/fixtures.js';

// GET /v1.3/customers?id= and GET /v1.3/messaging/sources?lead= (docs/api/customers.md,
// docs/api/messaging.md): many records in one request, each as its single route answers it, for
// what the caller may see only.
let h: Harness;
let owner: SignedUp;
let other: SignedUp;
let manager: ManagerFixture;
const leads: LeadFixture[] = [];
let hidden: LeadFixture;
let foreign: LeadFixture;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = await h.signUp();
  manager = await createManager(h, owner);
  const widget = await createIntegration(h, owner.accountId, 'widget');
  const bot = await createIntegration(h, owner.accountId, 'msgrb_bot');
  for (let i = 0; i < 4; i++) leads.push(await createLead(h, owner.accountId, i % 2 ? bot : widget, { customerName: `C${i}` }));
  // Assigned to the owner in an active status: not the manager's to see (docs/api/auth.md).
  const active = await h.database.db.kysely
    .selectFrom('statuses')
    .select('id')
    .where('account_id', '=', owner.accountId)
    .where('type', '=', 'active')
    .executeTakeFirstOrThrow();
  hidden = await createLead(h, owner.accountId, widget, { userId: owner.userId, statusId: active.id, statusType: 'active' });
  foreign = await createLead(h, other.accountId, await createIntegration(h, other.accountId, 'widget'));
});
afterAll(() => h?.close());

const get = (url: string, token = owner.access) => h.request({ method: 'GET', url, token });

async function single(url: string, token = owner.access) {
  const res = await get(url, token);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('GET /v1.3/customers?id=', () => {
  it('answers each customer as GET /customers/<id> does, in the order asked, leaving out ids of none or of another account', async () => {
    const asked = [leads[2]!, leads[0]!, foreign, leads[3]!];
    const res = await get(`/v1.3/customers?id=${asked.map((l) => l.customerId).join('&id=')}&id=999999`);
    expect(res.statusCode, res.body).toBe(200);
    const expected = [];
    for (const l of [leads[2]!, leads[0]!, leads[3]!]) expected.push(await single(`/v1.3/customers/${l.customerId}`));
    expect(res.json()).toEqual(expected);
    // Commas and id[] are the same parameter.
    const commas = await get(`/v1.3/customers?id=${leads[2]!.customerId},${leads[0]!.customerId}&id[]=${leads[3]!.customerId}`);
    expect(commas.json()).toEqual(expected);
  });

  it('shows a manager only the customers of the leads it sees', async () => {
    const ids = [hidden, leads[1]!].map((l) => l.customerId);
    const res = await get(`/v1.3/customers?id=${ids.join(',')}`, manager.access);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual([await single(`/v1.3/customers/${leads[1]!.customerId}`, manager.access)]);
  });

  it('refuses a missing id, a value that is not an integer and more than 200 values with 400; v1.1 and v1.2 do not have it', async () => {
    for (const query of ['', '?id=', '?id=abc', `?id=${Array.from({ length: 201 }, (_, i) => i + 1).join(',')}`]) {
      const res = await get(`/v1.3/customers${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_failed', details: [expect.objectContaining({ path: 'querystring.id' })] });
    }
    for (const v of ['v1.1', 'v1.2']) expect((await get(`/${v}/customers?id=${leads[0]!.customerId}`)).statusCode).toBe(404);
    expect((await h.request({ method: 'GET', url: `/v1.3/customers?id=${leads[0]!.customerId}` })).statusCode).toBe(401);
  });
});

describe('GET /v1.3/messaging/sources?lead=', () => {
  it("answers each lead's channels as GET /messaging/<id>/sources does, in the order asked, leaving out leads of none or of another account", async () => {
    const asked = [leads[3]!, foreign, leads[0]!, leads[1]!];
    const res = await get(`/v1.3/messaging/sources?lead=${asked.map((l) => l.leadId).join('&lead=')}&lead=999999`);
    expect(res.statusCode, res.body).toBe(200);
    const expected = [];
    for (const l of [leads[3]!, leads[0]!, leads[1]!])
      expected.push({ leadId: l.leadId, sources: await single(`/v1.3/messaging/${l.leadId}/sources`) });
    expect(res.json()).toEqual(expected);
    expect(expected.every((e) => e.sources.length === 1)).toBe(true);
  });

  it('shows a manager only the leads it sees; two leads of one customer on different integrations keep their own channels', async () => {
    const res = await get(`/v1.3/messaging/sources?lead=${hidden.leadId},${leads[0]!.leadId}`, manager.access);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual([{ leadId: leads[0]!.leadId, sources: await single(`/v1.3/messaging/${leads[0]!.leadId}/sources`) }]);
    // The same customer writing on a second integration: that lead lists that integration's channel only.
    const db = h.database.db.kysely;
    const extra = await createLead(h, owner.accountId, await createIntegration(h, owner.accountId, 'msgrb_bot', 'second'));
    await db.updateTable('leads').set({ customer_id: leads[0]!.customerId }).where('id', '=', extra.leadId).execute();
    await db.updateTable('sources').set({ customer_id: leads[0]!.customerId }).where('id', '=', extra.sourceId).execute();
    const both = (await get(`/v1.3/messaging/sources?lead=${extra.leadId},${leads[0]!.leadId}`)).json();
    expect(both.map((b: { leadId: number; sources: Array<{ realId: number }> }) => [b.leadId, b.sources.map((s) => s.realId)])).toEqual([
      [extra.leadId, [extra.sourceId]],
      [leads[0]!.leadId, [leads[0]!.sourceId]],
    ]);
  });

  it('refuses a missing lead, a value that is not an integer and more than 200 values with 400; v1.1 and v1.2 do not have it', async () => {
    for (const query of ['', '?lead=x1', `?${Array.from({ length: 201 }, (_, i) => `lead=${i + 1}`).join('&')}`]) {
      const res = await get(`/v1.3/messaging/sources${query}`);
      expect(res.statusCode, query).toBe(400);
      expect(res.json()).toMatchObject({ code: 'validation_failed' });
    }
    for (const v of ['v1.1', 'v1.2']) expect((await get(`/${v}/messaging/sources?lead=${leads[0]!.leadId}`)).statusCode).toBe(404);
  });
});
