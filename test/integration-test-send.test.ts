import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeMetaGraph } from './helpers/fake-meta-graph.js';
import { createIntegration, createManager } from './helpers/fixtures.js';

/**
 * "Send a test" (docs/api/integrations.md) against the fake Graph API: Meta's sample template to
 * the owner's own phone; bad input and types that cannot write first answer 400 before Meta is
 * asked. And the live streams hear `integration.changed` when an integration's health changes,
 * only for employees who may use it (docs/api/webhooks.md "The realtime stream").
 */
let graph: FakeMetaGraph;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  graph = await FakeMetaGraph.start();
  h = await createHarness({
    env: {
      PARLEY_META_GRAPH_URL: graph.url,
      PARLEY_PUBLIC_URL: 'https://parley.example.com',
      PARLEY_SEND_TIMEOUT_MS: '4000',
      PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    },
  });
});
afterAll(async () => {
  await h?.close();
  await graph?.close();
});
beforeEach(() => {
  graph.calls.length = 0;
});

async function connect(owner: SignedUp) {
  const n = ++seq;
  const number = {
    token: `EAAG-test-send-${n}`,
    phoneNumberId: `30${n}6543210987`,
    wabaId: `40${n}1234567890`,
    display: `+1 555-079-${1000 + n}`,
    name: `Shop ${n}`,
  };
  graph.addNumber(number);
  graph.templates.set(number.wabaId, [{ name: 'hello_world', language: 'en_US', category: 'UTILITY', status: 'APPROVED', components: [] }]);
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: {
      type: 'msgra_business_api',
      credentials: { accessToken: number.token, phoneNumberId: number.phoneNumberId, appSecret: `secret-${n}`, wabaId: number.wabaId },
    },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { number, id: res.json().id as number };
}

const sendTest = (who: { access: string }, id: number, payload: Record<string, unknown>) =>
  h.request({ method: 'POST', url: `/v1.3/integrations/${id}/test`, token: who.access, payload });
const integration = async (owner: SignedUp, id: number) =>
  (await h.request({ method: 'GET', url: `/v1.3/integrations/${id}`, token: owner.access })).json();

describe('send a test message', () => {
  it("sends Meta's sample template to the owner's phone and notes the outbound message", async () => {
    const owner = await h.signUp();
    const { number, id } = await connect(owner);
    const res = await sendTest(owner, id, { to: '+1 (555) 010-0999' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().messageId).toMatch(/^wamid\./);
    const [call] = graph.callsOf('POST', new RegExp(`^${number.phoneNumberId}/messages$`));
    expect(call?.token).toBe(number.token);
    expect(call?.body).toMatchObject({
      messaging_product: 'whatsapp',
      to: '15550100999',
      type: 'template',
      template: { name: 'hello_world', language: { code: 'en_US' } },
    });
    expect((await integration(owner, id)).health.lastOutboundAt).toBe(h.clock.now());
  });

  it('answers 400 naming the field for a malformed phone, before Meta is asked', async () => {
    const owner = await h.signUp();
    const { id } = await connect(owner);
    graph.calls.length = 0;
    for (const to of ['call me', '12345', '+0 555 0100', '1'.repeat(20), 'a\u0000b', '']) {
      const res = await sendTest(owner, id, { to });
      expect(res.statusCode, to).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(JSON.stringify(res.json().details)).toContain('body.to');
    }
    expect((await sendTest(owner, id, {})).statusCode).toBe(400);
    expect(graph.calls).toEqual([]);
  });

  it('answers 400 for a type whose provider does not let a business write first', async () => {
    const owner = await h.signUp();
    const widget = await createIntegration(h, owner.accountId, 'widget');
    const res = await sendTest(owner, widget, { to: '+15550100999' });
    expect(res.statusCode).toBe(400);
    expect(res.json().details).toEqual([{ path: 'params.id', message: expect.stringContaining('write only to a customer') }]);
  });

  it("shows Meta's refusal as 422 with its reason; a revoked token marks the integration refused", async () => {
    const owner = await h.signUp();
    const { number, id } = await connect(owner);
    graph.templates.set(number.wabaId, []);
    const missing = await sendTest(owner, id, { to: '+15550100999' });
    expect(missing.statusCode).toBe(422);
    expect(missing.json().error).toContain('Template name does not exist');

    number.token = 'rotated-elsewhere';
    const revoked = await sendTest(owner, id, { to: '+15550100999' });
    expect(revoked.statusCode).toBe(422);
    expect(await integration(owner, id)).toMatchObject({ status: 'auth failure', health: { lastError: { code: 'credentials_refused' } } });
  });

  it('is the owner’s alone: a manager gets 403, another account 404, and nothing is sent', async () => {
    const owner = await h.signUp();
    const stranger = await h.signUp();
    const { id } = await connect(owner);
    const manager = await createManager(h, owner, { sources: [id] });
    graph.calls.length = 0;
    expect((await sendTest(manager, id, { to: '+15550100999' })).statusCode).toBe(403);
    expect((await sendTest(stranger, id, { to: '+15550100999' })).statusCode).toBe(404);
    expect((await sendTest(owner, 999_999_999, { to: '+15550100999' })).statusCode).toBe(404);
    expect(graph.calls).toEqual([]);
  });
});

describe('the site widget', () => {
  it('has no credentials to update nor connection to check: 400, and its key stays', async () => {
    const owner = await h.signUp();
    const made = await h.request({ method: 'POST', url: '/v1.3/integrations', token: owner.access, payload: { type: 'widget' } });
    expect(made.statusCode, made.body).toBe(200);
    const { id, externalId } = made.json() as { id: number; externalId: string };
    const reconnect = await h.request({ method: 'POST', url: `/v1.3/integrations/${id}/reconnect`, token: owner.access });
    expect(reconnect.statusCode).toBe(400);
    const update = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${id}/credentials`,
      token: owner.access,
      payload: { credentials: {} },
    });
    expect(update.statusCode).toBe(400);
    expect((await integration(owner, id)).externalId).toBe(externalId);
  });
});

describe('connecting to a Graph API that does not answer', () => {
  it('keeps the integration in "auth failure" saying Meta did not answer in N s, never a 500', async () => {
    const owner = await h.signUp();
    const n = ++seq;
    const number = {
      token: `EAAG-slow-${n}`,
      phoneNumberId: `50${n}6543210987`,
      wabaId: `60${n}1234567890`,
      display: '+1 555 0100',
      name: 'Slow',
    };
    graph.addNumber(number);
    graph.failNext(new RegExp(`^${number.phoneNumberId}$`), 'hang');
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: {
        type: 'msgra_business_api',
        credentials: { accessToken: number.token, phoneNumberId: number.phoneNumberId, appSecret: 's', wabaId: number.wabaId },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'auth failure',
      health: { lastError: { code: 'provider_timeout', message: 'WhatsApp did not answer in 4 s: try again later.' } },
    });
  });
});

describe('integration.changed on the live stream', () => {
  type Msg = { type: string; event?: { type: string; integrationId?: number } };

  async function listen(who: { access: string }) {
    const auth = await h.services.auth.authenticate(who.access);
    const got: Msg[] = [];
    const end = await h.services.realtime.subscribe(auth, (m) => got.push(JSON.parse(m) as Msg));
    const changes = async () => {
      await h.services.realtime.poll();
      return got.filter((m) => m.event?.type === 'integration.changed').map((m) => m.event?.integrationId);
    };
    return { end, changes };
  }

  it('tells employees who may use the integration when its health changes, and no one else', async () => {
    const owner = await h.signUp();
    const stranger = await h.signUp();
    const { number, id } = await connect(owner);
    const other = await createIntegration(h, owner.accountId, 'widget');
    const allowed = await createManager(h, owner, { sources: [id] });
    const elsewhere = await createManager(h, owner, { sources: [other] });
    const streams = await Promise.all([owner, allowed, elsewhere, stranger].map(listen));

    const token = number.token;
    number.token = 'revoked';
    const reconnect = () => h.request({ method: 'POST', url: `/v1.3/integrations/${id}/reconnect`, token: owner.access });
    expect((await reconnect()).json().status).toBe('auth failure');
    const [ownerSaw, allowedSaw, elsewhereSaw, strangerSaw] = await Promise.all(streams.map((s) => s.changes()));
    expect(ownerSaw).toEqual([id]);
    expect(allowedSaw).toEqual([id]);
    expect(elsewhereSaw).toEqual([]);
    expect(strangerSaw).toEqual([]);

    number.token = token;
    expect((await reconnect()).json()).toMatchObject({ status: 'active', health: { lastError: null } });
    expect(await streams[1]!.changes()).toEqual([id, id]);
    for (const s of streams) s.end();
  });

  it('is never sent to webhooks', async () => {
    const owner = await h.signUp();
    const { number, id } = await connect(owner);
    const hook = await h.request({
      method: 'POST',
      url: '/v1.3/webhooks',
      token: owner.access,
      payload: { url: 'http://127.0.0.1:9/parley' },
    });
    expect(hook.statusCode, hook.body).toBe(200);
    number.token = 'revoked';
    await h.request({ method: 'POST', url: `/v1.3/integrations/${id}/reconnect`, token: owner.access });
    const events = await h.database.db.kysely
      .selectFrom('events')
      .select(['id', 'type'])
      .where('account_id', '=', owner.accountId)
      .where('type', '=', 'integration.changed')
      .execute();
    expect(events.length).toBe(1);
    const deliveries = await h.database.db.kysely
      .selectFrom('deliveries')
      .select('id')
      .where(
        'event_id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    expect(deliveries).toEqual([]);
  });
});
