import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createManager } from './helpers/fixtures.js';
import { FakeProvider, fakeAdapter } from './helpers/fake-provider.js';
import { API_VERSIONS } from '../src/api/versions.js';
import { mediaObject } from '../src/domain/files/media.js';

let h: Harness;
let fake: FakeProvider;
let owner: SignedUp;

const DAY = 86_400_000;

beforeAll(async () => {
  h = await createHarness();
  fake = await FakeProvider.start();
  for (const type of ['msgra', 'msgrb_personal', 'msgrb_bot']) h.services.channels.register(fakeAdapter(type, fake));
  owner = await h.signUp();
});
afterAll(async () => {
  await fake?.close();
  await h?.close();
});
beforeEach(async () => {
  fake.accept();
  fake.requests.length = 0;
  // Tests move the clock across days: a fresh access token for each.
  const res = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
  owner = { ...owner, access: res.json().accessToken.token };
});

const db = () => h.database.db.kysely;
let seq = 0;
const phone = () => `+38050${String(1_000_000 + ++seq)}`;

const post = (payload: object, token: string | undefined = owner.access, version = 'v1.3') =>
  h.request({ method: 'POST', url: `/${version}/messaging/post`, token, payload });

/** Everything a post may write in the account. */
async function snapshot(accountId: number) {
  return {
    customers: await db().selectFrom('customers').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
    profiles: await db().selectFrom('profiles').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
    sources: await db().selectFrom('sources').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
    leads: await db().selectFrom('leads').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
    messages: await db().selectFrom('messages').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
    // The channel's health records a refusal (docs/api/integrations.md "Health"): not part of what a refusal must leave unchanged.
    events: await db()
      .selectFrom('events')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('type', '!=', 'integration.changed')
      .orderBy('id')
      .execute(),
    counted: await db().selectFrom('write_first_contacts').selectAll().where('account_id', '=', accountId).orderBy('id').execute(),
  };
}

/** Fills today's quota of new contacts of the integration up to `used`. */
async function useQuota(accountId: number, integrationId: number, used: number) {
  const day = Math.floor(h.clock.now() / DAY);
  const rows = Array.from({ length: used }, (_, i) => ({
    account_id: accountId,
    integration_id: integrationId,
    social_id: `seeded-${day}-${i}`,
    day,
    created_at: h.clock.now(),
  }));
  if (rows.length) await db().insertInto('write_first_contacts').values(rows).execute();
}

describe('POST /messaging/post', () => {
  it('writes to a new contact: customer, profile, channel and inbox lead are created, with their events', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    const destination = phone();
    const res = await post({ message: { text: 'Your order has shipped' }, destination, saId, customId: 'ship-1' });
    expect(res.statusCode, res.body).toBe(200);
    const [message] = res.json();
    expect(message).toMatchObject({
      incoming: false,
      message: { text: 'Your order has shipped' },
      sa: { id: saId, type: 'msgra' },
      source: { id: destination, type: 'message', saId, sender: destination },
      sender: { userId: owner.userId },
      leadId: expect.any(Number),
    });
    expect(message).not.toHaveProperty('customId');
    expect(fake.sends.map((r) => r.body)).toEqual([expect.objectContaining({ chat: destination, text: 'Your order has shipped' })]);

    const lead = await db().selectFrom('leads').selectAll().where('id', '=', message.leadId).executeTakeFirstOrThrow();
    expect(lead).toMatchObject({
      integration_id: saId,
      status_type: 'inbox',
      status_id: null,
      user_id: null,
      last_message_incoming: 0,
      unread_count: 0,
    });
    const profile = await db().selectFrom('profiles').selectAll().where('integration_id', '=', saId).executeTakeFirstOrThrow();
    expect(profile).toMatchObject({ social_id: destination, customer_id: lead.customer_id, type: 'msgra' });
    const events = await db().selectFrom('events').selectAll().where('account_id', '=', owner.accountId).orderBy('id').execute();
    expect(events.map((e) => e.type).slice(-3)).toEqual(['customer.created', 'lead.created', 'message.outgoing']);
    expect(JSON.parse(events.at(-1)!.payload)).toMatchObject({
      leadId: lead.id,
      isNewLead: true,
      isNewCustomer: true,
      message: { customId: 'ship-1' },
    });

    // The lead is an ordinary conversation now: its channel and history are readable.
    const sources = await h.request({ method: 'GET', url: `/v1.3/messaging/${lead.id}/sources`, token: owner.access });
    expect(sources.json().map((s: { id: string }) => s.id)).toEqual([destination]);
  });

  it('writes first with an uploaded file (photo or doc)', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    async function* pdf() {
      yield new Uint8Array(Buffer.from(`%PDF-1.4\n${'x'.repeat(100)}`));
    }
    const file = await h.services.files.store(owner.accountId, pdf(), { filename: 'invoice.pdf', mime: 'application/pdf' });
    const media = mediaObject(file, 'type-filename-src', file.url);
    const res = await post({ message: { attachment: { type: 'doc', media } }, destination: phone(), saId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].message.attachments).toEqual([{ type: 'doc', url: file.url, text: 'invoice.pdf', filesize: file.size }]);
    expect(fake.sends[0].body).toMatchObject({ file: file.url, fileType: 'doc', text: '' });
    const video = await post({ message: { attachment: { type: 'video', media } }, destination: phone(), saId });
    expect(video.statusCode).toBe(400);
  });

  it('writes again into the same lead, counts a contact once, and repeats a customId without sending', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgrb_personal');
    const destination = 'someone_login';
    const first = await post({ message: { text: 'one' }, destination, saId, customId: 'k-1' });
    const second = await post({ message: { text: 'two' }, destination: ` ${destination} `, saId });
    const repeat = await post({ message: { text: 'one' }, destination, saId, customId: 'k-1' });
    for (const res of [first, second, repeat]) expect(res.statusCode, res.body).toBe(200);
    expect(second.json()[0].leadId).toBe(first.json()[0].leadId);
    expect(repeat.json()).toEqual(first.json());
    expect(fake.sends).toHaveLength(2);
    const counted = await db().selectFrom('write_first_contacts').selectAll().where('integration_id', '=', saId).execute();
    expect(counted.map((r) => r.social_id)).toEqual([destination]);
  });

  it('writes into the open lead of a customer who wrote before, on its own channel, without counting it', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    const integration = await db().selectFrom('integrations').selectAll().where('id', '=', saId).executeTakeFirstOrThrow();
    const destination = phone();
    const ingested = await h.services.ingest.ingest(integration, {
      externalId: `in-${destination}`,
      datetime: h.clock.now(),
      sender: { socialId: destination },
      channel: { externalId: `dm-${destination}`, type: 'message' },
      text: 'hello',
    });
    const res = await post({ message: { text: 'hello back' }, destination, saId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0]).toMatchObject({ leadId: ingested.leadId, source: { id: `dm-${destination}` } });
    expect(fake.sends[0].body.chat).toBe(`dm-${destination}`);
    expect(await db().selectFrom('write_first_contacts').selectAll().where('integration_id', '=', saId).execute()).toHaveLength(0);
  });

  it('stops at the daily limit of new contacts (429 daily_limit, Retry-After to UTC midnight) and starts again the next UTC day', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgrb_personal');
    await useQuota(owner.accountId, saId, 99);
    const known = phone();
    expect((await post({ message: { text: 'the 100th new contact' }, destination: known, saId })).statusCode).toBe(200);

    // Late in the same UTC day (the seeded rows and the 100th contact count for it).
    const midnight = (Math.floor(h.clock.now() / DAY) + 1) * DAY;
    h.clock.set(midnight - 30_000);
    const token = (await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } })).json()
      .accessToken.token;
    const before = await snapshot(owner.accountId);
    for (const v of API_VERSIONS) {
      const res = await post({ message: { text: 'one too many' }, destination: phone(), saId }, token, v);
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('30');
      if (v === 'v1.1') expect(res.json().statusCode).toBe(429);
      else expect(res.json().code).toBe('daily_limit');
    }
    expect(await snapshot(owner.accountId)).toEqual(before);
    expect(fake.sends).toHaveLength(1);

    // A contact already written to is not new: it may be written to at the limit.
    expect((await post({ message: { text: 'follow-up' }, destination: known, saId }, token)).statusCode).toBe(200);

    h.clock.advance(31_000);
    const next = await post({ message: { text: 'a new day' }, destination: phone(), saId }, token);
    expect(next.statusCode, next.body).toBe(200);
  });

  it('applies the 2500 limit of msgra and keeps integrations apart', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    const other = await createIntegration(h, owner.accountId, 'msgra');
    await useQuota(owner.accountId, saId, 2499);
    expect((await post({ message: { text: 'last one' }, destination: phone(), saId })).statusCode).toBe(200);
    expect((await post({ message: { text: 'over' }, destination: phone(), saId })).statusCode).toBe(429);
    expect((await post({ message: { text: 'other integration' }, destination: phone(), saId: other })).statusCode).toBe(200);
  });

  it('gives the place back when the channel refuses, and stores nothing', async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgrb_personal');
    await useQuota(owner.accountId, saId, 99);
    const before = await snapshot(owner.accountId);
    fake.answer(400, { ok: false, description: 'Bad Request: PEER_ID_INVALID' });
    const res = await post({ message: { text: 'hi' }, destination: phone(), saId });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toBe('Bad Request: PEER_ID_INVALID');
    fake.answer(503, {});
    expect((await post({ message: { text: 'hi' }, destination: phone(), saId })).statusCode).toBe(502);
    expect(await snapshot(owner.accountId)).toEqual(before);
    fake.accept();
    expect((await post({ message: { text: 'hi' }, destination: phone(), saId })).statusCode).toBe(200);
  });

  it('refuses integration types that cannot write first (400), empty messages (400), expired accounts (402)', async () => {
    const bot = await createIntegration(h, owner.accountId, 'msgrb_bot');
    const before = await snapshot(owner.accountId);
    for (const v of API_VERSIONS) {
      const res = await post({ message: { text: 'hi' }, destination: phone(), saId: bot }, owner.access, v);
      expect(res.statusCode).toBe(400);
    }
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    for (const payload of [
      { destination: phone(), saId },
      { message: { text: '' }, destination: phone(), saId },
      { message: { text: 'x' }, saId },
      { message: { text: 'x' }, destination: '   ', saId },
    ]) {
      expect((await post(payload)).statusCode, JSON.stringify(payload)).toBe(400);
    }
    const after = await snapshot(owner.accountId);
    expect({ ...after, events: after.events.filter((e) => e.type !== 'integration.created') }).toEqual({
      ...before,
      events: before.events,
    });

    const expired = await h.signUp();
    const theirs = await createIntegration(h, expired.accountId, 'msgra');
    const row = await db().selectFrom('accounts').select('plan').where('id', '=', expired.accountId).executeTakeFirstOrThrow();
    await db()
      .updateTable('accounts')
      .set({ plan: JSON.stringify({ ...JSON.parse(row.plan), expiration: h.clock.now() - 1 }) })
      .where('id', '=', expired.accountId)
      .execute();
    const res = await post({ message: { text: 'hi' }, destination: phone(), saId: theirs }, expired.access);
    expect(res.statusCode).toBe(402);
    expect(fake.sends).toHaveLength(0);
  });

  it("answers 404 for an integration of another account or out of the manager's reach; 401 without a token", async () => {
    const saId = await createIntegration(h, owner.accountId, 'msgra');
    const other = await h.signUp();
    expect((await post({ message: { text: 'x' }, destination: phone(), saId }, other.access)).statusCode).toBe(404);
    const manager = await createManager(h, owner, { sources: [null] });
    expect((await post({ message: { text: 'x' }, destination: phone(), saId }, manager.access)).statusCode).toBe(404);
    expect(
      (await h.request({ method: 'POST', url: '/v1.3/messaging/post', payload: { message: { text: 'x' }, destination: phone(), saId } }))
        .statusCode,
    ).toBe(401);
    const allowed = await createManager(h, owner, { sources: [saId] });
    const res = await post({ message: { text: 'x' }, destination: phone(), saId }, allowed.access);
    expect(res.statusCode, res.body).toBe(200);
    // The unassigned inbox lead it created is one the manager sees.
    const sources = await h.request({ method: 'GET', url: `/v1.3/messaging/${res.json()[0].leadId}/sources`, token: allowed.access });
    expect(sources.statusCode).toBe(200);
    expect(fake.sends).toHaveLength(1);
  });
});
