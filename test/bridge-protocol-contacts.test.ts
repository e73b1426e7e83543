import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Harness, SignedUp } from './helpers/harness.js';
import { activeBridge, connectPersonal, freshLogin, openBridgeSuite } from './helpers/bridge-setup.js';
import { FakeBridge } from './helpers/fake-bridge.js';

// The bridge protocol's settled points (docs/channels/bridge.md) and one contact per phone through
// a test bridge (docs/api/search.md "Write first").
let h: Harness;
let base: string;
let owner: SignedUp;

beforeAll(async () => {
  ({ h, base, owner } = await openBridgeSuite(2000));
});
afterAll(() => h?.close());
beforeEach(async () => {
  owner = await freshLogin(h, owner);
});

const db = () => h.database.db.kysely;
const post = (payload: object) => h.request({ method: 'POST', url: '/v1.3/messaging/post', token: owner.access, payload });
const leadsOf = (integrationId: number) =>
  db().selectFrom('leads').select(['id', 'customer_id']).where('integration_id', '=', integrationId).execute();

describe('the settled protocol', () => {
  it('hello always carries now; identity is required before session active', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await FakeBridge.connect(base, id, token);
    expect(bridge.received[0]).toMatchObject({ type: 'hello', now: h.clock.now() });
    bridge.send({ type: 'session', state: 'active' });
    expect(await bridge.closed).toEqual({ code: 4400, reason: 'identity before session active' });
    expect((await db().selectFrom('integrations').select('status').where('id', '=', id).executeTakeFirstOrThrow()).status).toBe(
      'connecting',
    );
  });

  it('empty externalIds break the schema: the socket is closed (4400) and nothing is stored', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    bridge.mode = { silent: true };
    const first = post({ saId: id, destination: '+79160000001', message: { text: 'one' } });
    const request = await bridge.next((m) => m.type === 'send');
    bridge.answer(request.requestId, { ok: true, externalIds: [] });
    expect((await bridge.closed).code).toBe(4400);
    expect([502, 504]).toContain((await first).statusCode);
    expect(await leadsOf(id)).toEqual([]);
  });

  it('a send answered without ids is a protocol error: 502 to the caller, the socket closed (4400), nothing stored', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    bridge.mode = { silent: true };
    const first = post({ saId: id, destination: '+79160000002', message: { text: 'two' } });
    const request = await bridge.next((m) => m.type === 'send');
    bridge.answer(request.requestId, { ok: true });
    const res = await first;
    expect(res.statusCode).toBe(502);
    expect(await bridge.closed).toEqual({ code: 4400, reason: `result ${request.requestId}: the result of a send must carry externalIds` });
    expect(await leadsOf(id)).toEqual([]);
  });
});

describe('one person, one customer, whatever form the phone came in', () => {
  it('write first without + and the answer on the chat with + land in one lead', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    const res = await post({ saId: id, destination: '77051234567', message: { text: 'Здравствуйте' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(bridge.acted.at(-1)).toMatchObject({ type: 'send', chatId: '+77051234567' });
    await bridge.inbound({ id: 'wa-answer-1', chatId: '+77051234567', sender: { socialId: '+77051234567', name: 'Айгуль' }, text: 'Да' });
    const leads = await leadsOf(id);
    expect(leads).toHaveLength(1);
    expect(leads[0].id).toBe(res.json()[0].leadId);
    const customer = await db().selectFrom('customers').select('phone').where('id', '=', leads[0].customer_id).executeTakeFirstOrThrow();
    expect(customer.phone).toBe('+77051234567');
  });

  it("stores the bridge's canonical chat id of a write first as the channel's id", async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgrb_personal');
    const bridge = await activeBridge(h, base, id, token);
    bridge.mode = { silent: true };
    const sent = post({ saId: id, destination: 'buyer_login', message: { text: 'hi' } });
    const request = await bridge.next((m) => m.type === 'send');
    bridge.answer(request.requestId, { ok: true, externalIds: ['tg-1'], chatId: '777001' });
    const res = await sent;
    expect(res.statusCode, res.body).toBe(200);
    bridge.mode = { accept: true };
    await bridge.inbound({ id: 'tg-answer', chatId: '777001', sender: { socialId: '777001', name: 'Buyer' }, text: 'hello back' });
    const leads = await leadsOf(id);
    expect(leads.map((l) => l.id)).toEqual([res.json()[0].leadId]);
  });

  it('write first to the phone of a lead made by POST /leads continues that lead', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    const created = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      token: owner.access,
      payload: { saId: id, customer: { name: 'Покупатель', phone: '8 (903) 555-12-34' } },
    });
    expect(created.statusCode, created.body).toBe(200);
    const res = await post({ saId: id, destination: '+7 903 555 12 34', message: { text: 'Ваш заказ готов' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].leadId).toBe(created.json().id);
    expect(bridge.acted.at(-1)).toMatchObject({ chatId: '+79035551234' });
    expect((await leadsOf(id)).length).toBe(1);
  });

  it("counts the daily new-contact limit by the normalized number; another country's number goes in E.164, an unparsable one as typed", async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    for (const destination of ['77051239999', '+7 705 123-99-99', '8 (705) 123 99 99']) {
      const res = await post({ saId: id, destination, message: { text: 'Добрый день' } });
      expect(res.statusCode, res.body).toBe(200);
      expect(bridge.acted.at(-1), destination).toMatchObject({ type: 'send', chatId: '+77051239999' });
    }
    const counted = await db().selectFrom('write_first_contacts').select('social_id').where('integration_id', '=', id).execute();
    expect(counted.map((c) => c.social_id)).toEqual(['+77051239999']);
    expect(await leadsOf(id)).toHaveLength(1);

    expect((await post({ saId: id, destination: '+49 30 1234567', message: { text: 'Hallo' } })).statusCode).toBe(200);
    expect(bridge.acted.at(-1)).toMatchObject({ type: 'send', chatId: '+49301234567' });
    expect((await post({ saId: id, destination: '12345', message: { text: 'hi' } })).statusCode).toBe(200);
    expect(bridge.acted.at(-1)).toMatchObject({ type: 'send', chatId: '12345' });
    const all = await db().selectFrom('write_first_contacts').select('social_id').where('integration_id', '=', id).orderBy('id').execute();
    expect(all.map((c) => c.social_id)).toEqual(['+77051239999', '+49301234567', '12345']);
  });

  it('check-contact takes any form of the phone', async () => {
    const { id, token } = await connectPersonal(h, owner, 'msgra');
    const bridge = await activeBridge(h, base, id, token);
    bridge.contacts.add('+79161234567');
    for (const chatId of ['89161234567', '+7 (916) 123-45-67', '79161234567']) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/messaging/check-contact',
        token: owner.access,
        payload: { saId: id, chatId },
      });
      expect(res.statusCode, chatId).toBe(200);
    }
  });
});
