import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { FakeTelegram } from './helpers/fake-telegram.js';
import { TelegramPoller } from '../src/channels/telegram/telegram-poller.js';

/**
 * The v1.3 `health` of integrations (docs/api/integrations.md "Health") against the fake Bot API:
 * set on a refused connect, a revoked token and a failing send, cleared by the next success, never
 * shown to another account; credentials updated and webhooks registered again in place.
 */
let tg: FakeTelegram;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  tg = await FakeTelegram.start();
  h = await createHarness({ env: { PARLEY_TELEGRAM_API_URL: tg.url } });
  h.services.bots.wait = async () => {};
});
afterAll(async () => {
  await h?.close();
  await tg?.close();
});

type Health = {
  lastInboundAt: number | null;
  lastOutboundAt: number | null;
  lastError: { at: number; code: string; message: string } | null;
  mode: string;
};

function newBot() {
  const n = ++seq;
  const token = `${8100 + n}:AAH-health-${n}`;
  tg.addBot(token, { id: 8100 + n, username: `flowers${n}_bot`, first_name: `Flowers ${n}` });
  return token;
}

async function connect(owner: SignedUp, token: string) {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'msgrb_bot', credentials: { token } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: number; status: string; externalId: string; health: Health };
}

const one = (owner: SignedUp, id: number, version = 'v1.3') =>
  h.request({ method: 'GET', url: `/${version}/integrations/${id}`, token: owner.access });
const healthOf = async (owner: SignedUp, id: number) => (await one(owner, id)).json().health as Health;

/** A customer writes to the bot; the poller stores it. Answers the lead. */
async function customerWrites(token: string, integrationId: number): Promise<number> {
  const user = 950_000 + ++seq;
  tg.chats.set(String(user), { first_name: 'Ada' });
  tg.queueUpdate(token, {
    message: {
      message_id: ++seq,
      date: 1772366400 + seq,
      chat: { id: user, type: 'private' },
      from: { id: user, is_bot: false, first_name: 'Ada' },
      text: 'Roses?',
    },
  });
  await new TelegramPoller(h.services.bots, h.services.deps.log, 0).runOnce();
  const row = await h.database.db.kysely
    .selectFrom('messages')
    .select('lead_id')
    .where('integration_id', '=', integrationId)
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  return Number(row.lead_id);
}

const send = (owner: SignedUp, leadId: number, text: string) =>
  h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload: { message: { text } } });

describe('integration health', () => {
  it('starts empty, with the mode the installation receives by (polling without PARLEY_PUBLIC_URL)', async () => {
    const owner = await h.signUp();
    const made = await connect(owner, newBot());
    expect(made.health).toEqual({ lastInboundAt: null, lastOutboundAt: null, lastError: null, mode: 'polling' });
    expect(await healthOf(owner, made.id)).toEqual(made.health);
  });

  it('says why Telegram refused the token at connect, keeping the integration in "auth failure"', async () => {
    const owner = await h.signUp();
    const res = await h.request({
      method: 'POST',
      url: '/v1.3/integrations',
      token: owner.access,
      payload: { type: 'msgrb_bot', credentials: { token: '8099:AAH-unknown-to-telegram' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().status).toBe('auth failure');
    expect(res.json().health.lastError).toMatchObject({ at: h.clock.now(), code: 'credentials_refused' });
    expect(res.json().health.lastError.message).toMatch(/^Telegram refused the bot token \(40[14] .+\): check it with @BotFather\.$/);
    const listed = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(listed.json()[0].health).toEqual(res.json().health);
  });

  it('keeps the last inbound and outbound times, records a failing send, and clears it with the next success', async () => {
    const owner = await h.signUp();
    const token = newBot();
    const made = await connect(owner, token);
    h.clock.advance(60_000);
    const arrived = h.clock.now();
    const leadId = await customerWrites(token, made.id);
    expect(await healthOf(owner, made.id)).toMatchObject({ lastInboundAt: arrived, lastOutboundAt: null, lastError: null });

    h.clock.advance(60_000);
    tg.failNext('sendMessage', 400, { ok: false, error_code: 400, description: 'Bad Request: <b>chat</b> not found' });
    const failed = await send(owner, leadId, 'We have red ones');
    expect(failed.statusCode).toBe(422);
    const afterFailure = await healthOf(owner, made.id);
    expect(afterFailure.lastOutboundAt).toBeNull();
    expect(afterFailure.lastError).toEqual({
      at: h.clock.now(),
      code: 'send_refused',
      message: 'Telegram refused a message (400 Bad Request: <b>chat</b> not found).',
    });

    h.clock.advance(60_000);
    const sentAt = h.clock.now();
    expect((await send(owner, leadId, 'We have red ones')).statusCode).toBe(200);
    expect(await healthOf(owner, made.id)).toMatchObject({ lastInboundAt: arrived, lastOutboundAt: sentAt, lastError: null });
  });

  it('marks a revoked token "auth failure" with the refusal; new credentials bring it back with the same id and leads', async () => {
    const owner = await h.signUp();
    const token = newBot();
    const made = await connect(owner, token);
    const leadId = await customerWrites(token, made.id);
    tg.revoke(token);
    h.clock.advance(1000);
    expect((await send(owner, leadId, 'Still there?')).statusCode).toBe(422);
    const broken = (await one(owner, made.id)).json();
    expect(broken.status).toBe('auth failure');
    expect(broken.health.lastError).toEqual({
      at: h.clock.now(),
      code: 'credentials_refused',
      message: 'Telegram refused the bot token (401 Unauthorized): check it with @BotFather.',
    });

    // BotFather's /revoke gives the same bot a new token.
    const fresh = `${made.externalId}:AAH-fresh-${seq}`;
    tg.addBot(fresh, { id: Number(made.externalId), username: `flowers_again_bot`, first_name: 'Flowers' });
    const put = await h.request({
      method: 'PUT',
      url: `/v1.3/integrations/${made.id}/credentials`,
      token: owner.access,
      payload: { credentials: { token: fresh } },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ id: made.id, status: 'active', health: { lastError: null } });
    expect(put.body).not.toContain(fresh);
    expect((await send(owner, leadId, 'Back again')).statusCode).toBe(200);
  });

  it("refuses new credentials of the wrong shape (400), refused ones (422) and another bot's (422), keeping the old ones", async () => {
    const owner = await h.signUp();
    const token = newBot();
    const made = await connect(owner, token);
    const put = (credentials: Record<string, string>) =>
      h.request({ method: 'PUT', url: `/v1.3/integrations/${made.id}/credentials`, token: owner.access, payload: { credentials } });
    const calls = tg.calls.length;
    const shape = await put({ token: 'no colon here' });
    expect(shape.statusCode).toBe(400);
    expect(shape.json().details).toEqual([{ path: 'body.credentials.token', message: expect.stringMatching(/^must be /) }]);
    expect(tg.calls.length).toBe(calls);
    const nul = await put({ token: '1:a\u0000b' });
    expect(nul.statusCode).toBe(400);

    const refused = await put({ token: '8098:AAH-unknown' });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toMatch(/^Telegram refused the bot token/);
    const other = await put({ token: newBot() });
    expect(other.statusCode).toBe(422);
    expect(other.json().error).toMatch(/another Telegram account/);

    const row = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', made.id).executeTakeFirstOrThrow();
    expect(h.services.integrations.channelIntegration(row).credentials.token).toBe(token);
    expect(row.status).toBe('active');
  });

  it('reconnects with the stored credentials, recording a refusal in health rather than answering an error', async () => {
    const owner = await h.signUp();
    const token = newBot();
    const made = await connect(owner, token);
    const reconnect = () => h.request({ method: 'POST', url: `/v1.3/integrations/${made.id}/reconnect`, token: owner.access });
    const ok = await reconnect();
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ status: 'active', health: { lastError: null } });
    expect(tg.callsOf('deleteWebhook').length).toBeGreaterThan(0);
    tg.revoke(token);
    const refused = await reconnect();
    expect(refused.statusCode).toBe(200);
    expect(refused.json()).toMatchObject({ status: 'auth failure', health: { lastError: { code: 'credentials_refused' } } });
  });

  it('is never shown to, nor changed by, another account or a manager', async () => {
    const owner = await h.signUp();
    const stranger = await h.signUp();
    const made = await connect(owner, newBot());
    expect((await one(stranger, made.id)).statusCode).toBe(404);
    for (const [method, url] of [
      ['PUT', `/v1.3/integrations/${made.id}/credentials`],
      ['POST', `/v1.3/integrations/${made.id}/reconnect`],
    ] as const) {
      const res = await h.request({
        method,
        url,
        token: stranger.access,
        payload: method === 'PUT' ? { credentials: { token: '1:x' } } : undefined,
      });
      expect(res.statusCode).toBe(404);
    }
    const listed = await h.request({ method: 'GET', url: '/v1.3/integrations', token: stranger.access });
    expect(listed.json()).toEqual([]);
  });

  it('leaves v1.1 and v1.2 answers without health', async () => {
    const owner = await h.signUp();
    await connect(owner, newBot());
    for (const v of ['v1.1', 'v1.2']) {
      const res = await h.request({ method: 'GET', url: `/${v}/integrations`, token: owner.access });
      expect(res.json()[0].health).toBeUndefined();
    }
  });

  it('tells what each type needs: credential fields with their formats, and how it receives here', async () => {
    const owner = await h.signUp();
    const res = await h.request({ method: 'GET', url: '/v1.3/integrations/types', token: owner.access });
    expect(res.statusCode).toBe(200);
    expect(res.json().publicUrl).toBe(false);
    const types = new Map(
      (res.json().types as Array<{ type: string; fields: Array<{ name: string; pattern: string }> }>).map((t) => [t.type, t]),
    );
    expect(types.size).toBe(15);
    expect(types.get('msgrb_bot')).toMatchObject({ mode: 'polling', needsPublicUrl: false, available: true, fields: [{ name: 'token' }] });
    expect(types.get('msgrc_bot')).toMatchObject({ mode: 'webhook', needsPublicUrl: true });
    expect(types.get('msgra')).toMatchObject({ mode: 'bridge', fields: [] });
    const wa = types.get('msgra_business_api')!;
    expect(wa.fields.map((f) => f.name)).toEqual(['accessToken', 'phoneNumberId', 'appSecret', 'wabaId']);
    expect(new RegExp(wa.fields[1]!.pattern).test('1234567890')).toBe(true);
    expect(new RegExp(wa.fields[1]!.pattern).test('+1 555')).toBe(false);
  });
});
