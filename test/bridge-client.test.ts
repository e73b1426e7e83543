import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Harness, SignedUp } from './helpers/harness.js';
import { connectPersonal, openBridgeSuite, waitForStatus } from './helpers/bridge-setup.js';
import { BridgeClient, type Json } from '../src/connectors/bridge-client.js';
import { LoginPrompter } from '../src/connectors/login-prompter.js';
import { runCli } from '../src/cli.js';

/**
 * The connectors' Parley side (BridgeClient, LoginPrompter) against the real server over a real
 * WebSocket, with a provider played by the test: what `parley bridge telegram` does around mtcute.
 */
let h: Harness;
let base: string;
let owner: SignedUp;

beforeAll(async () => {
  ({ h, base, owner } = await openBridgeSuite(2000));
});
afterAll(() => h?.close());

describe('the connector side of the bridge', () => {
  it('logs in with a code and the 2FA password answered in Parley, then receives, acknowledges and sends', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const client = new BridgeClient({ url: base, integrationId: id, token, client: 'test-connector/1' });
    const prompter = new LoginPrompter(client);
    const requests: Json[] = [];
    let loggedIn = false;
    const connected = new Promise<void>((resolve) =>
      client.start({
        onConnected: () => resolve(),
        onRequest: async (request) => {
          if (request.type === 'login.answer') return prompter.answer(request);
          requests.push(request);
          return loggedIn ? { ok: true, externalIds: [`sent-${requests.length}`] } : { ok: false, retryable: 'not logged in' };
        },
      }),
    );
    await connected;

    // The provider library asks for the code, then the password.
    const code = prompter.ask('code');
    const state = () => h.request({ method: 'GET', url: `/v1.3/integrations/${id}/bridge`, token: owner.access });
    await vi.waitFor(async () => expect((await state()).json().prompt).toMatchObject({ kind: 'code' }));
    const answer = (kind: string, value: string) =>
      h.request({ method: 'POST', url: `/v1.3/integrations/${id}/bridge/login`, token: owner.access, payload: { kind, value } });
    const wrongKind = await answer('password', 'x');
    expect(wrongKind.statusCode).toBe(422);
    expect(wrongKind.json().error).toMatch(/waits for the code/);
    expect((await answer('code', '12345')).statusCode).toBe(200);
    expect(await code).toBe('12345');
    prompter.rejectLast('The password is not valid');
    const password = prompter.ask('password');
    await vi.waitFor(async () =>
      expect((await state()).json().prompt).toMatchObject({ kind: 'password', error: 'The password is not valid' }),
    );
    expect((await answer('password', 'secret')).statusCode).toBe(200);
    expect(await password).toBe('secret');

    prompter.clear();
    loggedIn = true;
    client.send({ type: 'identity', login: 'shop', externalId: '42' });
    client.send({ type: 'session', state: 'active' });
    await waitForStatus(h, id, 'active');

    // One Parley would refuse is dropped by the connector rather than resent forever.
    client.inbound({ id: '77:0', chatId: '77', datetime: h.clock.now(), sender: { socialId: '77', name: 'x'.repeat(300) } });
    client.inbound({ id: '77:1', chatId: '77', datetime: h.clock.now(), sender: { socialId: '77', name: 'Ann' }, text: 'hello' });
    await vi.waitFor(async () => {
      const row = await h.database.db.kysely
        .selectFrom('messages')
        .select('lead_id')
        .where('integration_id', '=', id)
        .where('external_id', '=', '77:1')
        .executeTakeFirst();
      expect(row).toBeDefined();
    });
    const lead = await h.database.db.kysely
      .selectFrom('messages')
      .select('lead_id')
      .where('external_id', '=', '77:1')
      .executeTakeFirstOrThrow();
    expect(await h.database.db.kysely.selectFrom('messages').select('id').where('external_id', '=', '77:0').execute()).toEqual([]);
    const sent = await h.request({
      method: 'POST',
      url: `/v1.3/messaging/${lead.lead_id}/send`,
      token: owner.access,
      payload: { message: { text: 'hi Ann' } },
    });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(requests).toEqual([expect.objectContaining({ type: 'send', chatId: '77', text: 'hi Ann' })]);

    // Rotating the token ends the connector for good.
    await h.request({ method: 'POST', url: `/v1.3/integrations/${id}/bridge/token`, token: owner.access, payload: {} });
    expect((await client.finished).code).toBe(4401);
  });

  it('a wrong token ends the connector at once', async () => {
    const { id } = await connectPersonal(h, owner);
    const client = new BridgeClient({ url: base, integrationId: id, token: 'pbt_wrong', client: 'test' });
    client.start({ onConnected: () => undefined, onRequest: async () => ({ ok: true }) });
    expect(await client.finished).toEqual({ code: 4401, reason: 'wrong bridge token' });
  });

  it('`parley bridge` refuses unknown connectors and incomplete options', async () => {
    const errors: string[] = [];
    const out = { log: () => undefined, error: (m: string) => errors.push(m) };
    expect(await runCli(['bridge', 'signal', '--url', base], {}, out as never)).toBe(1);
    expect(errors.at(-1)).toMatch(/unknown connector "signal" \(shipped: telegram, whatsapp\)/);
    expect(await runCli(['bridge', 'telegram', '--url', base, '--integration', '1'], {}, out as never)).toBe(1);
    expect(errors.at(-1)).toMatch(/--token .* is required.*--api-id/s);
  });
});
