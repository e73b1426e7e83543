import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { webhookFixture } from './helpers/webhook-fixture.js';
import { API_VERSIONS, type ApiVersion } from '../src/api/versions.js';
import type { IntegrationRow } from '../src/db/schema.js';
import { recordEvent } from '../src/events/outbox.js';

let h: Harness;
const fx = webhookFixture(() => h);
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
});
afterEach(() => fx.stopAll());
afterAll(() => h.close());

const db = () => h.database.db.kysely;
let seq = 0;

async function register(owner: SignedUp, url: string, version: ApiVersion) {
  const res = await h.request({ method: 'POST', url: `/${version}/webhooks`, token: owner.access, payload: { url } });
  expect(res.statusCode, res.body).toBe(200);
}

/** A customer's message, then an employee's answer on the same channel. */
async function conversation(integration: IntegrationRow, owner: SignedUp) {
  seq += 1;
  h.clock.advance(1000);
  const incomingAt = h.clock.now();
  const { leadId } = await h.services.ingest.ingest(integration, {
    externalId: `p-${seq}`,
    datetime: incomingAt,
    sender: { socialId: `c-${seq}`, name: 'Ann' },
    channel: { externalId: `chat-${seq}`, type: 'message' },
    text: 'question',
  });
  const source = await db().selectFrom('sources').selectAll().where('external_id', '=', `chat-${seq}`).executeTakeFirstOrThrow();
  const lead = await db().selectFrom('leads').selectAll().where('id', '=', leadId).executeTakeFirstOrThrow();
  h.clock.advance(1000);
  const outgoingAt = h.clock.now();
  await db()
    .transaction()
    .execute((trx) =>
      h.services.ingest.recordOutgoing(trx, { integration, source, lead, userId: owner.userId }, [
        { externalId: `o-${seq}`, text: 'answer', attachments: [], replyTo: undefined, customId: `cid-${seq}`, at: outgoingAt },
      ]),
    );
  return { leadId, source, incomingAt, outgoingAt };
}

async function integrationWith(accountId: number, type: string, externalId: string): Promise<IntegrationRow> {
  return db()
    .insertInto('integrations')
    .values({ account_id: accountId, type, login: 'shop', external_id: externalId, created_at: h.clock.now() })
    .returningAll()
    .executeTakeFirstOrThrow();
}

describe('webhook payloads as the hosted service sends them', () => {
  it('message.datetime is an ISO 8601 string in the webhook events of every version; history answers keep Unix ms', async () => {
    const owner = await h.signUp();
    const integration = await integrationWith(owner.accountId, 'msgrb_bot', '5550001');
    const receivers = new Map<ApiVersion, Awaited<ReturnType<typeof fx.receiver>>>();
    for (const v of API_VERSIONS) {
      const r = await fx.receiver();
      receivers.set(v, r);
      await register(owner, `${r.url}/${v}`, v);
    }
    const t = await conversation(integration, owner);
    await fx.worker().drain();
    for (const v of API_VERSIONS) {
      const bodies = receivers.get(v)!.received.map((x) => JSON.parse(x.body) as Record<string, any>);
      const incoming = bodies.find((b) => b.type === 'message.incoming')!;
      expect(incoming.message.datetime).toBe(new Date(t.incomingAt).toISOString());
      if (v !== 'v1.1') {
        const outgoing = bodies.find((b) => b.type === 'message.outgoing')!;
        expect(outgoing.message.datetime).toBe(new Date(t.outgoingAt).toISOString());
        expect(outgoing.message.customId).toBe(`cid-${seq}`);
      }
    }
    const history = await h.request({ method: 'POST', url: `/v1.3/messaging/${t.leadId}/history/${t.source.id}`, token: owner.access });
    const datetimes = (history.json().messages as Array<{ datetime: unknown }>).map((m) => m.datetime);
    expect(datetimes).toEqual([t.outgoingAt, t.incomingAt]);
  });

  it('sender.id is an integer in answers and events: the numeric externalId of the integration, absent when it has none', async () => {
    const owner = await h.signUp();
    const r = await fx.receiver();
    await register(owner, `${r.url}/hook`, 'v1.3');
    const numeric = await integrationWith(owner.accountId, 'msgra', '79990001122');
    const widget = await integrationWith(owner.accountId, 'widget', 'wdg-3f9a');
    const bridge = await integrationWith(owner.accountId, 'msgra2', '');
    const cases: Array<[IntegrationRow, number | undefined]> = [
      [numeric, 79990001122],
      [widget, undefined],
      [bridge, undefined],
    ];
    for (const [integration, expected] of cases) {
      const t = await conversation(integration, owner);
      const history = await h.request({ method: 'POST', url: `/v1.3/messaging/${t.leadId}/history/${t.source.id}`, token: owner.access });
      const [answer, question] = history.json().messages as Array<{ sender: Record<string, unknown> }>;
      expect(typeof question.sender.id).toBe('number');
      expect(answer.sender).toEqual(expected === undefined ? { userId: owner.userId } : { id: expected, userId: owner.userId });
    }
    await fx.worker().drain();
    const events = r.received.map((x) => JSON.parse(x.body) as Record<string, any>).filter((b) => b.type.startsWith('message.'));
    expect(events).toHaveLength(6);
    for (const e of events) {
      if (e.type === 'message.incoming') expect(Number.isSafeInteger(e.message.sender.id)).toBe(true);
    }
    expect(events.filter((e) => e.type === 'message.outgoing').map((e) => e.message.sender)).toEqual([
      { id: 79990001122, userId: owner.userId },
      { userId: owner.userId },
      { userId: owner.userId },
    ]);
  });

  it('an event stored with a string sender.id is sent without it (one JSON type per field)', async () => {
    const owner = await h.signUp();
    const integration = await integrationWith(owner.accountId, 'widget', 'wdg-old');
    const r = await fx.receiver();
    await register(owner, `${r.url}/hook`, 'v1.3');
    const payload = { leadId: 1, message: { datetime: 1767225600000, sender: { id: 'wdg-old', userId: owner.userId }, customId: 'x' } };
    await db()
      .transaction()
      .execute((trx) => recordEvent(trx, { accountId: owner.accountId, type: 'message.outgoing', leadId: null, payload }, h.clock.now()));
    expect(integration.external_id).toBe('wdg-old');
    await fx.worker().drain();
    const sent = JSON.parse(r.received[0].body) as Record<string, any>;
    expect(sent.message).toEqual({ datetime: '2026-01-01T00:00:00.000Z', sender: { userId: owner.userId }, customId: 'x' });
    expect(Object.keys(sent).slice(0, 2)).toEqual(['type', 'accountId']);
  });
});
