import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead } from './helpers/fixtures.js';

let h: Harness;
let owner: SignedUp;
let integration: number;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_LOGIN_MAX_PER_IP: '100000' } });
  owner = await h.signUp();
  integration = await createIntegration(h, owner.accountId);
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;
const lead = async () => (await createLead(h, owner.accountId, integration)).leadId;
const tagEvents = async (leadId: number) =>
  (await db().selectFrom('events').selectAll().where('lead_id', '=', leadId).orderBy('id').execute()).map((e) => JSON.parse(e.payload));
const tagRows = (leadId: number) => db().selectFrom('lead_tags').selectAll().where('lead_id', '=', leadId).execute();
const post = (id: number, tag: string, v = 'v1.3') => h.request({ method: 'POST', url: `/${v}/tags/${id}/${tag}`, token: owner.access });
const del = (id: number, tag: string, v = 'v1.3') => h.request({ method: 'DELETE', url: `/${v}/tags/${id}/${tag}`, token: owner.access });

describe('POST /tags/<leadId>/<tag>', () => {
  it("adds a tag, creating it on first use, and answers the lead's tags; adding again changes nothing", async () => {
    const id = await lead();
    const first = await post(id, 'vip');
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual(['vip']);
    const again = await post(id, 'vip');
    expect(again.json()).toEqual(['vip']);
    expect(await tagRows(id)).toHaveLength(1);
    const list = await h.request({ method: 'GET', url: '/v1.3/tags?search=vi', token: owner.access });
    expect(list.json().map((t: { tag: string }) => t.tag)).toEqual(['vip']);

    const events = await tagEvents(id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'lead.changed', accountId: owner.accountId, leadId: id, changes: ['tags'], lead: { id } });
  });

  it('takes URL-encoded tags of any script, with slashes, percent signs and spaces (trimmed); answers them sorted without case', async () => {
    const id = await lead();
    for (const tag of ['новый клиент', 'a/b', '50% off', '  Zeta ', 'alpha']) {
      expect((await post(id, encodeURIComponent(tag), 'v1.1')).statusCode).toBe(200);
    }
    const res = await post(id, 'beta', 'v1.2');
    expect(res.json()).toEqual(['50% off', 'a/b', 'alpha', 'beta', 'Zeta', 'новый клиент']);
    const item = (await h.request({ method: 'GET', url: `/v1.3/leads?id=${id}`, token: owner.access })).json()[0];
    expect(item.tags).toEqual(res.json());
    const filtered = await h.request({
      method: 'GET',
      url: `/v1.3/leads/all?tags=${encodeURIComponent('новый клиент')}`,
      token: owner.access,
    });
    expect(filtered.json().map((l: { id: number }) => l.id)).toEqual([id]);
  });

  it('keeps tags of one value apart by case, and shares a tag between leads', async () => {
    const a = await lead();
    const b = await lead();
    await post(a, 'Sale');
    await post(b, 'Sale');
    expect((await post(a, 'sale')).json()).toEqual(['Sale', 'sale']);
    const tags = await db()
      .selectFrom('tags')
      .selectAll()
      .where('account_id', '=', owner.accountId)
      .where('tag_key', '=', 'sale')
      .execute();
    expect(tags).toHaveLength(2);
  });

  it('a tag of 100 characters is fine; a blank one is 400 and changes nothing', async () => {
    const id = await lead();
    expect((await post(id, 'x'.repeat(100))).statusCode).toBe(200);
    for (const v of ['v1.1', 'v1.2', 'v1.3']) {
      const res = await post(id, '%20%20', v);
      expect(res.statusCode).toBe(400);
    }
    expect(await tagRows(id)).toHaveLength(1);
    const long = await post(id, 'y'.repeat(101));
    expect(long.statusCode).toBe(414); // the router refuses path parameters over 100 characters
    expect(await tagRows(id)).toHaveLength(1);
  });

  it("another account's lead is 404; a non-integer id is 400 on v1.3 and 404 before", async () => {
    const other = await h.signUp();
    const theirs = (await createLead(h, other.accountId, await createIntegration(h, other.accountId))).leadId;
    expect((await post(theirs, 'mine')).statusCode).toBe(404);
    expect((await del(theirs, 'mine')).statusCode).toBe(404);
    expect(await tagRows(theirs)).toHaveLength(0);
    expect((await post(Number.NaN, 'x')).statusCode).toBe(400);
    expect((await h.request({ method: 'POST', url: '/v1.2/tags/abc/x', token: owner.access })).statusCode).toBe(404);
    expect((await h.request({ method: 'POST', url: `/v1.3/tags/${theirs}/x` })).statusCode).toBe(401);
  });
});

describe('DELETE /tags/<leadId>/<tag>', () => {
  it("removes the tag from the lead (the account keeps it) and answers the lead's tags; idempotent", async () => {
    const id = await lead();
    await post(id, 'one');
    await post(id, 'two');
    const res = await del(id, 'one', 'v1.2');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(['two']);
    expect((await del(id, 'one')).json()).toEqual(['two']);
    expect((await del(id, 'never-existed')).json()).toEqual(['two']);
    expect((await del(id, 'two', 'v1.1')).json()).toEqual([]);
    const list = await h.request({ method: 'GET', url: '/v1.3/tags?search=one', token: owner.access });
    expect(list.json().map((t: { tag: string }) => t.tag)).toEqual(['one']);

    // Four real changes (two adds, two removals): four events; the no-op calls recorded nothing.
    const events = await tagEvents(id);
    expect(events.map((e) => [e.type, e.changes])).toEqual(Array.from({ length: 4 }, () => ['lead.changed', ['tags']]));
  });
});
