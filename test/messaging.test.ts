import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createLead, createManager } from './helpers/fixtures.js';
import { FakeProvider, fakeAdapter } from './helpers/fake-provider.js';
import { API_VERSIONS } from '../src/api/versions.js';
import type { IntegrationRow } from '../src/db/schema.js';
import { mediaObject } from '../src/domain/files/media.js';
import { visibleSendTarget } from '../src/domain/messaging/messaging.repo.js';
import { scopeOf } from '../src/domain/policy/policy.js';
import { findAccount } from '../src/domain/accounts/accounts.repo.js';
import { DIALECT } from './helpers/database.js';
import { statementCounter } from './helpers/statements.js';

let h: Harness;
let fake: FakeProvider;
let owner: SignedUp;

beforeAll(async () => {
  // A short send timeout: the timeout test waits for it, with the fake holding its answer.
  h = await createHarness({ env: { PARLEY_SEND_TIMEOUT_MS: '300' } });
  fake = await FakeProvider.start();
  h.services.channels.register(fakeAdapter('msgrb_bot', fake));
  h.services.channels.register(fakeAdapter('msgra_business_api', fake));
  h.services.channels.register(fakeAdapter('social3', fake, { checkContact: false }));
  owner = await h.signUp();
});
afterAll(async () => {
  await fake?.close();
  await h?.close();
});
beforeEach(() => {
  fake.accept();
  fake.splitFiles = false;
  fake.requests.length = 0;
});

const db = () => h.database.db.kysely;
let seq = 0;

interface Conversation {
  integration: IntegrationRow;
  leadId: number;
  sourceId: number;
  chat: string;
  incomingId: number;
}

/** A customer who wrote once through an integration of `type`: its lead and channel. */
async function conversation(
  account: Pick<SignedUp, 'accountId'> = owner,
  type = 'msgrb_bot',
  integrationId?: number,
): Promise<Conversation> {
  const id = integrationId ?? (await createIntegration(h, account.accountId, type));
  const integration = await db().selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const social = `cust-${++seq}`;
  const result = await h.services.ingest.ingest(integration, {
    externalId: `in-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId: social, name: `Customer ${seq}` },
    channel: { externalId: `chat-${social}`, type: 'message' },
    text: 'hello, anyone there?',
  });
  const source = await db().selectFrom('sources').selectAll().where('external_id', '=', `chat-${social}`).executeTakeFirstOrThrow();
  return { integration, leadId: result.leadId, sourceId: source.id, chat: source.external_id, incomingId: result.messageId };
}

const send = (token: string | undefined, leadId: number, payload: object, version = 'v1.3') =>
  h.request({ method: 'POST', url: `/${version}/messaging/${leadId}/send`, token, payload });

const messagesOf = (leadId: number) => db().selectFrom('messages').selectAll().where('lead_id', '=', leadId).orderBy('id').execute();
const leadRow = (leadId: number) => db().selectFrom('leads').selectAll().where('id', '=', leadId).executeTakeFirstOrThrow();
/** Events a refusal must not add; the channel's health records the refusal itself (docs/api/integrations.md "Health"). */
const eventCount = async (accountId: number) =>
  (await db().selectFrom('events').select('id').where('account_id', '=', accountId).where('type', '!=', 'integration.changed').execute())
    .length;

/** A refused request must store nothing: same messages, same lead, no new events. */
async function expectNothingStored(c: Conversation, accountId: number, run: () => Promise<void>) {
  const before = { messages: await messagesOf(c.leadId), lead: await leadRow(c.leadId), events: await eventCount(accountId) };
  await run();
  expect(await messagesOf(c.leadId)).toEqual(before.messages);
  expect(await leadRow(c.leadId)).toEqual(before.lead);
  expect(await eventCount(accountId)).toBe(before.events);
}

async function expire(accountId: number) {
  const row = await db().selectFrom('accounts').select('plan').where('id', '=', accountId).executeTakeFirstOrThrow();
  const plan = { ...JSON.parse(row.plan), expiration: h.clock.now() - 1000 };
  await db()
    .updateTable('accounts')
    .set({ plan: JSON.stringify(plan) })
    .where('id', '=', accountId)
    .execute();
}

describe('POST /messaging/<leadId>/send', () => {
  it('sends through the channel, stores the message, moves the lead and records message.outgoing', async () => {
    const c = await conversation();
    h.clock.advance(90_000);
    const res = await send(owner.access, c.leadId, { message: { text: 'Hi! How can we help?' }, source: c.sourceId, userId: owner.userId });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toHaveLength(1);
    expect(body[0]).toMatchObject({
      datetime: h.clock.now(),
      incoming: false,
      message: { text: 'Hi! How can we help?', url: '', attachments: [] },
      sa: { id: c.integration.id, type: 'msgrb_bot' },
      sender: { userId: owner.userId },
      source: { id: c.chat, realId: c.sourceId, type: 'message', saId: c.integration.id },
      replyTo: null,
    });
    expect(fake.sends).toEqual([
      { path: '/send', body: expect.objectContaining({ chat: c.chat, text: 'Hi! How can we help?', replyTo: null }) },
    ]);

    const rows = await messagesOf(c.leadId);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({
      id: Number(body[0].messageId),
      incoming: 0,
      external_id: 'fake-1',
      user_id: owner.userId,
      source_id: c.sourceId,
    });
    const lead = await leadRow(c.leadId);
    expect(lead).toMatchObject({ last_message_id: rows[1].id, last_message_incoming: 0, response_time: 90_000, awaiting_since: null });
    const events = await db()
      .selectFrom('events')
      .selectAll()
      .where('lead_id', '=', c.leadId)
      .where('type', '=', 'message.outgoing')
      .execute();
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0].payload).message.messageId).toBe(body[0].messageId);
  });

  it('finds the channel by realId as a number or string, by its id string, or picks the latest message channel', async () => {
    const c = await conversation();
    for (const source of [c.sourceId, String(c.sourceId), c.chat, undefined]) {
      const res = await send(owner.access, c.leadId, {
        message: { text: `via ${String(source)}` },
        ...(source === undefined ? {} : { source }),
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()[0].source.realId).toBe(c.sourceId);
    }
    expect(fake.sends.map((r) => r.body.chat)).toEqual([c.chat, c.chat, c.chat, c.chat]);
  });

  it('without source, uses the message channel the lead spoke on last', async () => {
    const c = await conversation();
    // The same customer writes from a second chat of the same integration: same lead, new channel.
    const profile = await db()
      .selectFrom('profiles')
      .selectAll()
      .where('customer_id', '=', (await leadRow(c.leadId)).customer_id)
      .executeTakeFirstOrThrow();
    h.clock.advance(1000);
    const second = await h.services.ingest.ingest(c.integration, {
      externalId: `in-second-${c.leadId}`,
      datetime: h.clock.now(),
      sender: { socialId: profile.social_id },
      channel: { externalId: `group-${c.leadId}`, type: 'message' },
      text: 'from the group',
    });
    expect(second.leadId).toBe(c.leadId);
    const res = await send(owner.access, c.leadId, { message: { text: 'answer' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].source.id).toBe(`group-${c.leadId}`);
  });

  it('refuses a source of another lead or an unknown source (400) without sending', async () => {
    const c = await conversation();
    const other = await conversation();
    for (const source of [other.sourceId, other.chat, 987654321, 'no-such-chat']) {
      await expectNothingStored(c, owner.accountId, async () => {
        const res = await send(owner.access, c.leadId, { message: { text: 'x' }, source });
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().code).toBe('validation_failed');
      });
    }
    expect(fake.sends).toHaveLength(0);
  });

  it('answers 422 with the provider reason when the channel refuses, storing nothing (every version body)', async () => {
    const c = await conversation();
    fake.answer(403, { ok: false, description: 'Forbidden: bot was blocked by the user' });
    await expectNothingStored(c, owner.accountId, async () => {
      const res = await send(owner.access, c.leadId, { message: { text: 'hello?' } });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ code: 'channel_rejected', error: 'Forbidden: bot was blocked by the user' });
      const legacy = await send(owner.access, c.leadId, { message: { text: 'hello?' } }, 'v1.1');
      expect(legacy.statusCode).toBe(422);
      expect(legacy.json()).toMatchObject({ statusCode: 422, message: 'Forbidden: bot was blocked by the user' });
    });
    expect(fake.sends).toHaveLength(2);
  });

  it('answers 502 when the provider fails, storing nothing', async () => {
    const c = await conversation();
    fake.answer(500, { ok: false, description: 'Internal Server Error' });
    await expectNothingStored(c, owner.accountId, async () => {
      const res = await send(owner.access, c.leadId, { message: { text: 'hello?' } });
      expect(res.statusCode).toBe(502);
      expect(res.json().code).toBe('channel_failed');
    });
  });

  it('answers 504 when the provider does not answer in time, storing nothing', async () => {
    const c = await conversation();
    fake.hold();
    await expectNothingStored(c, owner.accountId, async () => {
      const res = await send(owner.access, c.leadId, { message: { text: 'hello?' } });
      expect(res.statusCode).toBe(504);
      expect(res.json().code).toBe('channel_timeout');
    });
    expect(fake.sends).toHaveLength(1);
  });

  it('answers the first messages for a repeated customId and sends once (also when the repeats race)', async () => {
    const c = await conversation();
    const payload = { message: { text: 'order #1 confirmed' }, customId: 'order-1' };
    const first = await send(owner.access, c.leadId, payload);
    expect(first.statusCode, first.body).toBe(200);
    const again = await send(owner.access, c.leadId, payload);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(first.json());
    expect(first.json()[0]).not.toHaveProperty('customId');

    const racing = await Promise.all([1, 2, 3].map(() => send(owner.access, c.leadId, { ...payload, customId: 'order-2' })));
    expect(racing.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(new Set(racing.map((r) => r.json()[0].messageId)).size).toBe(1);
    expect(fake.sends).toHaveLength(2);
    expect((await messagesOf(c.leadId)).filter((m) => m.custom_id !== null).map((m) => m.custom_id)).toEqual(['order-1', 'order-2']);
    const outgoing = await db()
      .selectFrom('events')
      .selectAll()
      .where('lead_id', '=', c.leadId)
      .where('type', '=', 'message.outgoing')
      .orderBy('id')
      .execute();
    expect(outgoing.map((e) => JSON.parse(e.payload).message.customId)).toEqual(['order-1', 'order-2']);

    // The same customId on another lead is another message.
    const d = await conversation();
    expect((await send(owner.access, d.leadId, payload)).statusCode).toBe(200);
    expect(fake.sends).toHaveLength(3);
  });

  it('a customId claimed by another process waits for it; an expired claim (a dead process) is taken over', async () => {
    const c = await conversation();
    const now = h.clock.now();
    // Another process claimed the key and is sending: this one waits rather than sending too.
    await db()
      .insertInto('send_keys')
      .values({ lead_id: c.leadId, custom_id: 'busy', claimed_until: now + 60_000, created_at: now })
      .execute();
    const waiting = send(owner.access, c.leadId, { message: { text: 'once' }, customId: 'busy' });
    let answered = false;
    void waiting.then(() => (answered = true));
    await h.services.deps.db.kysely.selectFrom('send_keys').selectAll().execute();
    expect(answered).toBe(false);
    expect(fake.sends).toHaveLength(0);
    // That send failed (its claim ends without messages): the waiting repeat sends, once.
    await db().deleteFrom('send_keys').where('custom_id', '=', 'busy').execute();
    expect((await waiting).statusCode).toBe(200);
    expect(fake.sends).toHaveLength(1);

    await db()
      .insertInto('send_keys')
      .values({ lead_id: c.leadId, custom_id: 'dead', claimed_until: now - 1, created_at: now - 60_000 })
      .execute();
    expect((await send(owner.access, c.leadId, { message: { text: 'taken over' }, customId: 'dead' })).statusCode).toBe(200);
    expect(fake.sends).toHaveLength(2);
    // Claims end with the send: nothing is left behind.
    expect(await db().selectFrom('send_keys').selectAll().where('lead_id', '=', c.leadId).execute()).toEqual([]);
  });

  it('sends as the caller by default; the owner may name a confirmed employee', async () => {
    const c = await conversation();
    const manager = await createManager(h, owner);
    const res = await send(owner.access, c.leadId, { message: { text: 'from the manager' }, userId: String(manager.userId) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].sender.userId).toBe(manager.userId);
    expect((await messagesOf(c.leadId)).at(-1)!.user_id).toBe(manager.userId);
  });

  it('refuses a userId of another account or of an unconfirmed employee (400)', async () => {
    const c = await conversation();
    const other = await h.signUp();
    const unconfirmed = await db()
      .insertInto('users')
      .values({
        account_id: owner.accountId,
        login: `invited-${seq}@example.com`,
        name: null,
        password_hash: null,
        role: 'manager',
        confirmed: 0,
        created_at: h.clock.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const userId of [other.userId, unconfirmed.id, 99_999_999]) {
      await expectNothingStored(c, owner.accountId, async () => {
        const res = await send(owner.access, c.leadId, { message: { text: 'x' }, userId });
        expect(res.statusCode, res.body).toBe(400);
      });
    }
    expect(fake.sends).toHaveLength(0);
  });

  it('lets a manager send only as itself (403 otherwise)', async () => {
    const c = await conversation();
    const manager = await createManager(h, owner);
    await expectNothingStored(c, owner.accountId, async () => {
      const res = await send(manager.access, c.leadId, { message: { text: 'x' }, userId: owner.userId });
      expect(res.statusCode).toBe(403);
    });
    const own = await send(manager.access, c.leadId, { message: { text: 'mine' }, userId: manager.userId });
    expect(own.statusCode, own.body).toBe(200);
    expect(own.json()[0].sender.userId).toBe(manager.userId);
  });

  it('answers 402 for an expired account and sends nothing', async () => {
    const account = await h.signUp();
    const c = await conversation(account);
    await expire(account.accountId);
    await expectNothingStored(c, account.accountId, async () => {
      const res = await send(account.access, c.leadId, { message: { text: 'x' } });
      expect(res.statusCode).toBe(402);
      expect(res.json().code).toBe('account_expired');
    });
    expect(fake.sends).toHaveLength(0);
  });

  it('sends a template only where the integration type has templates', async () => {
    const template = {
      namespace: 'ns-1',
      language: { code: 'en' },
      name: 'order_update',
      component_values: [{ type: 'body', parameters: [{ type: 'text', text: '42' }] }],
    };
    const bot = await conversation();
    await expectNothingStored(bot, owner.accountId, async () => {
      const res = await send(owner.access, bot.leadId, { template });
      expect(res.statusCode).toBe(400);
      expect(res.json().details[0].path).toBe('body.template');
    });
    const business = await conversation(owner, 'msgra_business_api');
    const res = await send(owner.access, business.leadId, { template });
    expect(res.statusCode, res.body).toBe(200);
    expect(fake.sends).toHaveLength(1);
    expect(fake.sends[0].body.template).toEqual({ ...template, language: { code: 'en', policy: 'deterministic' } });
    expect(res.json()[0].message.text).toBe('[template order_update]');
  });

  it("quotes a message of the lead with replyId (the provider gets its id); another lead's message is 400", async () => {
    const c = await conversation();
    const res = await send(owner.access, c.leadId, { message: { text: 'answering that' }, replyId: c.incomingId });
    expect(res.statusCode, res.body).toBe(200);
    expect(fake.sends[0].body.replyTo).toBe((await messagesOf(c.leadId))[0].external_id);
    expect(res.json()[0].replyTo).toMatchObject({ messageId: c.incomingId, incoming: true, message: { text: 'hello, anyone there?' } });
    const other = await conversation();
    await expectNothingStored(c, owner.accountId, async () => {
      expect((await send(owner.access, c.leadId, { message: { text: 'x' }, replyId: other.incomingId })).statusCode).toBe(400);
    });
  });

  it('refuses a message without text, attachment or template, an attachment without media, and message with template (400)', async () => {
    const c = await conversation();
    const bodies = [
      {},
      { message: {} },
      { message: { text: '   ' } },
      { message: { text: 'x', attachment: { type: 'photo' } } },
      { message: { text: 'x' }, template: { namespace: 'n', language: { code: 'en' }, name: 't' } },
      { message: { text: 12 } },
      { message: { text: 'x' }, customId: 'c'.repeat(256) },
    ];
    for (const payload of bodies) {
      await expectNothingStored(c, owner.accountId, async () => {
        const res = await send(owner.access, c.leadId, payload);
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      });
    }
    expect(fake.sends).toHaveLength(0);
  });

  it('checks saId against the channel from v1.2 on; v1.1 ignores it', async () => {
    const c = await conversation();
    for (const v of ['v1.2', 'v1.3']) {
      expect((await send(owner.access, c.leadId, { message: { text: 'x' }, saId: c.integration.id + 1000 }, v)).statusCode).toBe(400);
      expect((await send(owner.access, c.leadId, { message: { text: 'x' }, saId: c.integration.id }, v)).statusCode).toBe(200);
    }
    const legacy = await send(owner.access, c.leadId, { message: { text: 'x' }, saId: c.integration.id + 1000 }, 'v1.1');
    expect(legacy.statusCode, legacy.body).toBe(200);
    expect(legacy.json()[0].source).not.toHaveProperty('identifier');
    expect(fake.sends).toHaveLength(3);
  });

  it('answers 422 for an integration that cannot send (no adapter, or disconnected)', async () => {
    const widget = await conversation(owner, 'widget');
    await expectNothingStored(widget, owner.accountId, async () => {
      const res = await send(owner.access, widget.leadId, { message: { text: 'x' } });
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('channel_rejected');
    });
    const gone = await conversation();
    await db().updateTable('integrations').set({ deleted_at: h.clock.now() }).where('id', '=', gone.integration.id).execute();
    expect((await send(owner.access, gone.leadId, { message: { text: 'x' } })).statusCode).toBe(422);
    expect(fake.sends).toHaveLength(0);
  });
});

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(120, 7)]);

async function* bytes(data: Buffer) {
  yield new Uint8Array(data);
}

describe('attachments', () => {
  it('sends an uploaded file named by its media object and stores it as the attachment', async () => {
    const c = await conversation();
    const file = await h.services.files.store(owner.accountId, bytes(PNG), { filename: 'receipt.png', mime: 'image/png' });
    const media = mediaObject(file, 'mime-name-path', file.url);
    const res = await send(owner.access, c.leadId, { message: { text: 'your receipt', attachment: { type: 'photo', media } } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toHaveLength(1);
    expect(res.json()[0].message).toEqual({
      text: 'your receipt',
      url: '',
      attachments: [{ type: 'photo', url: file.url, text: 'receipt.png', filesize: PNG.length }],
    });
    expect(fake.sends[0].body).toMatchObject({ text: 'your receipt', file: file.url, fileType: 'photo' });

    // A provider that makes two messages of a text and a file: two History messages, text first.
    fake.splitFiles = true;
    const split = await send(owner.access, c.leadId, { message: { text: 'again', attachment: { media } } });
    expect(split.statusCode, split.body).toBe(200);
    expect(
      split.json().map((m: { message: { text: string; attachments: unknown[] } }) => [m.message.text, m.message.attachments.length]),
    ).toEqual([
      ['again', 0],
      ['', 1],
    ]);
    expect(split.json()[1].message.attachments[0].type).toBe('photo');
  });

  it('refuses media naming no file of the account (400), storing and sending nothing', async () => {
    const c = await conversation();
    const other = await h.signUp();
    const theirs = await h.services.files.store(other.accountId, bytes(PNG), { filename: 'x.png', mime: 'image/png' });
    const medias = [
      mediaObject(theirs, 'mime-name-path', theirs.url),
      { mime: 'image/png', name: 'x.png', path: '/files/AAAAAAAAAAAAAAAAAAAAAA/x.png' },
      { nothing: 'here' },
    ];
    for (const media of medias) {
      await expectNothingStored(c, owner.accountId, async () => {
        const res = await send(owner.access, c.leadId, { message: { attachment: { type: 'photo', media } } });
        expect(res.statusCode, res.body).toBe(400);
      });
    }
    expect(fake.sends).toHaveLength(0);
  });
});

describe('POST /messaging/check-contact', () => {
  it('answers 200 {exists: true} when the channel reaches the contact, 404 when not', async () => {
    const integrationId = await createIntegration(h, owner.accountId, 'msgrb_bot');
    fake.contacts.add('5550001');
    for (const v of API_VERSIONS) {
      const yes = await h.request({
        method: 'POST',
        url: `/${v}/messaging/check-contact`,
        token: owner.access,
        payload: { saId: integrationId, chatId: '5550001' },
      });
      expect(yes.statusCode, yes.body).toBe(200);
      expect(yes.json()).toEqual({ exists: true });
      const no = await h.request({
        method: 'POST',
        url: `/${v}/messaging/check-contact`,
        token: owner.access,
        payload: { saId: String(integrationId), chatId: 5550002 },
      });
      expect(no.statusCode).toBe(404);
    }
    expect(fake.requests.filter((r) => r.path === '/check').map((r) => r.body.chat)).toEqual([
      '5550001',
      '5550002',
      '5550001',
      '5550002',
      '5550001',
      '5550002',
    ]);
  });

  it('answers 400 for an integration whose channel cannot check contacts, 404 for one out of reach', async () => {
    const social3 = await createIntegration(h, owner.accountId, 'social3');
    const widget = await createIntegration(h, owner.accountId, 'widget');
    for (const saId of [social3, widget]) {
      const res = await h.request({
        method: 'POST',
        url: '/v1.3/messaging/check-contact',
        token: owner.access,
        payload: { saId, chatId: 'x' },
      });
      expect(res.statusCode).toBe(400);
    }
    const other = await h.signUp();
    const theirs = await createIntegration(h, other.accountId, 'msgrb_bot');
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/check-contact',
      token: owner.access,
      payload: { saId: theirs, chatId: 'x' },
    });
    expect(res.statusCode).toBe(404);
    const manager = await createManager(h, owner, { sources: [widget] });
    const mine = await createIntegration(h, owner.accountId, 'msgrb_bot');
    const denied = await h.request({
      method: 'POST',
      url: '/v1.3/messaging/check-contact',
      token: manager.access,
      payload: { saId: mine, chatId: 'x' },
    });
    expect(denied.statusCode).toBe(404);
    expect(fake.requests).toHaveLength(0);
  });
});

describe('access', () => {
  it('hides a lead the manager cannot see (404) on sources, history and send; no token is 401', async () => {
    const integrationId = await createIntegration(h, owner.accountId, 'msgrb_bot');
    const assigned = await createLead(h, owner.accountId, integrationId, { userId: owner.userId, statusType: 'active' });
    const manager = await createManager(h, owner);
    const restricted = await createManager(h, owner, { sources: [null], allowAllDeals: true });
    const other = await h.signUp();
    const requests = (v: string) => [
      { method: 'GET' as const, url: `/${v}/messaging/${assigned.leadId}/sources` },
      { method: 'POST' as const, url: `/${v}/messaging/${assigned.leadId}/history/${assigned.sourceId}` },
      { method: 'POST' as const, url: `/${v}/messaging/${assigned.leadId}/send`, payload: { message: { text: 'x' } } },
    ];
    for (const v of API_VERSIONS) {
      for (const req of requests(v)) {
        expect((await h.request({ ...req })).statusCode, `${req.url} without token`).toBe(401);
        for (const token of [manager.access, restricted.access, other.access]) {
          const res = await h.request({ ...req, token });
          expect(res.statusCode, `${req.method} ${req.url}`).toBe(404);
          if (v === 'v1.1') expect(res.json().statusCode).toBe(404);
          else expect(res.json().code).toBe('not_found');
        }
        expect((await h.request({ ...req, token: owner.access })).statusCode, `${req.url} as owner`).toBe(200);
      }
    }
    expect(fake.sends).toHaveLength(3);
  });

  it("reads a send's lead, integration, channels and plan together, in one statement on PostgreSQL, under the scope's rule", async () => {
    // Every send starts here (docs/performance.md).
    const c = await conversation();
    const second = await db()
      .insertInto('sources')
      .values({
        ...(await db().selectFrom('sources').selectAll().where('id', '=', c.sourceId).executeTakeFirstOrThrow()),
        id: undefined,
        external_id: `${c.chat}-2`,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const ownerAuth = await h.services.auth.authenticate(owner.access);
    const { counter, statements, reset } = statementCounter();
    const counted = db().withPlugin(counter);
    const scope = await scopeOf(counted, ownerAuth);
    reset();
    const target = await visibleSendTarget(counted, scope, c.leadId);
    if (DIALECT === 'postgres') expect(statements()).toBe(1);
    const lead = await db().selectFrom('leads').selectAll().where('id', '=', c.leadId).executeTakeFirstOrThrow();
    expect(target).toEqual({
      lead,
      integration: c.integration,
      sources: await db().selectFrom('sources').selectAll().where('id', 'in', [c.sourceId, second.id]).orderBy('id').execute(),
      plan: (await findAccount(db(), owner.accountId))?.plan,
    });
    // A manager of another integration, and another account: not seen.
    const other = await conversation();
    const manager = await createManager(h, owner, { sources: [other.integration.id] });
    expect(
      await visibleSendTarget(db(), await scopeOf(db(), await h.services.auth.authenticate(manager.access)), c.leadId),
    ).toBeUndefined();
    const stranger = await h.signUp();
    expect(
      await visibleSendTarget(db(), await scopeOf(db(), await h.services.auth.authenticate(stranger.access)), c.leadId),
    ).toBeUndefined();
    const seen = await visibleSendTarget(db(), await scopeOf(db(), await h.services.auth.authenticate(manager.access)), other.leadId);
    expect(seen?.lead.id).toBe(other.leadId);
  });

  it("reads the send targets of one turn together on PostgreSQL, each caller with copies of its own and under its own scope's rule", async () => {
    // docs/performance.md: one statement for the sends of a turn.
    const [a, b] = [await conversation(), await conversation()];
    const manager = await createManager(h, owner, { sources: [b.integration.id] });
    const { counter, statements, reset } = statementCounter();
    const counted = db().withPlugin(counter);
    const ownerScope = await scopeOf(counted, await h.services.auth.authenticate(owner.access));
    const managerScope = await scopeOf(counted, await h.services.auth.authenticate(manager.access));
    reset();
    const [first, second, third, hidden, shown] = await Promise.all([
      visibleSendTarget(counted, ownerScope, a.leadId),
      visibleSendTarget(counted, ownerScope, a.leadId),
      visibleSendTarget(counted, ownerScope, b.leadId),
      visibleSendTarget(counted, managerScope, a.leadId),
      visibleSendTarget(counted, managerScope, b.leadId),
    ]);
    if (DIALECT === 'postgres') expect(statements()).toBe(1);
    expect([first?.lead.id, second?.lead.id, third?.lead.id, hidden, shown?.lead.id]).toEqual([
      a.leadId,
      a.leadId,
      b.leadId,
      undefined,
      b.leadId,
    ]);
    first!.lead.unread_count = 99;
    first!.sources[0].external_id = 'changed here';
    expect(second?.lead.unread_count).not.toBe(99);
    expect(second?.sources[0].external_id).toBe(a.chat);
  });

  it('lets a manager message the unassigned inbox lead it sees', async () => {
    const c = await conversation();
    const manager = await createManager(h, owner, { sources: [c.integration.id] });
    const res = await send(manager.access, c.leadId, { message: { text: 'hello from a manager' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()[0].sender.userId).toBe(manager.userId);
  });
});
