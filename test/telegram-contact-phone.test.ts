import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeTelegram } from './helpers/fake-telegram.js';
import { TelegramPoller } from '../src/channels/telegram/telegram-poller.js';

// A Telegram contact the person shares of themselves carries their phone (docs/api/search.md
// "Phones"): stored in E.164 on their customer, found by any form, offered for a merge when another
// customer has it. Through the fake Bot API (long polling), on both databases.

let tg: FakeTelegram;
let h: Harness;
let owner: SignedUp;
let seq = 0;

beforeAll(async () => {
  tg = await FakeTelegram.start();
  h = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url } });
  h.services.bots.wait = async () => {};
  owner = await h.signUp();
});
afterAll(async () => {
  await h?.close();
  await tg?.close();
});

const db = () => h.database.db.kysely;
const poller = () => new TelegramPoller(h.services.bots, h.services.deps.log, 0);

async function connectBot() {
  const n = ++seq;
  const token = `${8100 + n}:AAH-contact-${n}`;
  tg.addBot(token, { id: 8100 + n, username: `contact${n}_bot`, first_name: `Contact ${n}` });
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'msgrb_bot', credentials: { token } },
  });
  expect(res.statusCode).toBe(200);
  return { token, id: (res.json() as { id: number }).id };
}

function message(userId: number, extra: Record<string, unknown>) {
  return {
    message: {
      message_id: ++seq,
      date: 1772366400 + seq,
      chat: { id: userId, type: 'private', first_name: 'Ada' },
      from: { id: userId, is_bot: false, first_name: 'Ada', username: `ada${userId}` },
      ...extra,
    },
  };
}

async function customerOf(integrationId: number, socialId: number) {
  const profile = await db()
    .selectFrom('profiles')
    .select('customer_id')
    .where('integration_id', '=', integrationId)
    .where('social_id', '=', String(socialId))
    .executeTakeFirstOrThrow();
  return db().selectFrom('customers').selectAll().where('id', '=', profile.customer_id).executeTakeFirstOrThrow();
}

describe('Telegram contact shares', () => {
  it("the sender's own contact fills their customer's phone in E.164, on a known customer and on a new one", async () => {
    const bot = await connectBot();
    const known = 910_001;
    const fresh = 910_002;
    tg.queueUpdate(bot.token, message(known, { text: 'hello' }));
    expect(await poller().runOnce()).toBe(1);
    expect((await customerOf(bot.id, known)).phone).toBeNull();

    // Telegram sends the number without "+" (or with it); both are international.
    tg.queueUpdate(bot.token, message(known, { contact: { phone_number: '79161230001', first_name: 'Ada', user_id: known } }));
    tg.queueUpdate(bot.token, message(fresh, { contact: { phone_number: '+7 916 123-00-02', first_name: 'Ada', user_id: fresh } }));
    expect(await poller().runOnce()).toBe(2);
    expect(await customerOf(bot.id, known)).toMatchObject({ phone: '+79161230001', phone_as_typed: '79161230001' });
    expect(await customerOf(bot.id, fresh)).toMatchObject({ phone: '+79161230002' });

    const changed = await db()
      .selectFrom('events')
      .select('payload')
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'customer.changed')
      .execute();
    expect(changed.map((e) => JSON.parse(e.payload).customer.phone)).toContain('+79161230001');

    // Found by the form Russians write it in.
    const found = await h.request({
      method: 'POST',
      url: '/v1.3/search/customers',
      token: owner.access,
      payload: { q: '8 916 123-00-01' },
    });
    expect(found.statusCode).toBe(200);
    const knownCustomer = await customerOf(bot.id, known);
    const leadIds = (found.json() as { leads: Array<{ id: number } | number> }).leads.map((l) => (typeof l === 'number' ? l : l.id));
    const knownLeads = await db().selectFrom('leads').select('id').where('customer_id', '=', knownCustomer.id).execute();
    expect(leadIds).toEqual(expect.arrayContaining(knownLeads.map((l) => l.id)));
  });

  it("someone else's contact, or a customer who already has a phone, changes no phone", async () => {
    const bot = await connectBot();
    const user = 910_010;
    tg.queueUpdate(bot.token, message(user, { contact: { phone_number: '+79161230010', first_name: 'Bob', user_id: 5 } }));
    tg.queueUpdate(bot.token, message(user, { contact: { phone_number: '+79161230011', first_name: 'Bob' } }));
    expect(await poller().runOnce()).toBe(2);
    expect((await customerOf(bot.id, user)).phone).toBeNull();

    const customer = await customerOf(bot.id, user);
    expect(
      (await h.request({ method: 'PUT', url: `/v1.3/customers/${customer.id}`, token: owner.access, payload: { phone: '+79161230012' } }))
        .statusCode,
    ).toBe(200);
    tg.queueUpdate(bot.token, message(user, { contact: { phone_number: '+79161230013', first_name: 'Ada', user_id: user } }));
    expect(await poller().runOnce()).toBe(1);
    expect((await customerOf(bot.id, user)).phone).toBe('+79161230012');
  });

  it('a customer whose shared phone another customer has is offered for a merge', async () => {
    const bot = await connectBot();
    const user = 910_020;
    const lead = await h.request({
      method: 'POST',
      url: '/v1.3/leads',
      token: owner.access,
      payload: { saId: bot.id, customer: { name: 'Ada by phone', phone: '8 (916) 123-00-20' } },
    });
    expect(lead.statusCode, lead.body).toBe(200);
    tg.queueUpdate(bot.token, message(user, { contact: { phone_number: '79161230020', first_name: 'Ada', user_id: user } }));
    expect(await poller().runOnce()).toBe(1);
    const customer = await customerOf(bot.id, user);
    const same = await h.request({ method: 'GET', url: `/v1.3/customers/${customer.id}/same-phone`, token: owner.access });
    expect(same.json()).toEqual({ customers: [{ id: expect.any(Number), name: 'Ada by phone', phone: '+79161230020' }] });
  });
});
