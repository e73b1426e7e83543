import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Harness, SignedUp } from './helpers/harness.js';
import { FakeBridge } from './helpers/fake-bridge.js';
import { createManager } from './helpers/fixtures.js';
import { activeBridge, connectPersonal, freshLogin, openBridgeSuite, waitForStatus } from './helpers/bridge-setup.js';
import { sql } from 'kysely';
import { DIALECT } from './helpers/database.js';

let h: Harness;
let base: string;
let owner: SignedUp;

beforeAll(async () => {
  ({ h, base, owner } = await openBridgeSuite(300));
});
afterAll(() => h?.close());
beforeEach(async () => {
  owner = await freshLogin(h, owner);
});

const db = () => h.database.db.kysely;
const integration = (id: number) => db().selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const messagesOf = (id: number) => db().selectFrom('messages').selectAll().where('integration_id', '=', id).orderBy('id').execute();
const bridgeState = (id: number) => h.request({ method: 'GET', url: `/v1.3/integrations/${id}/bridge`, token: owner.access });
const send = (leadId: number, text: string) =>
  h.request({ method: 'POST', url: `/v1.3/messaging/${leadId}/send`, token: owner.access, payload: { message: { text } } });

/** A lead made by an inbound message through the bridge. */
async function leadVia(bridge: FakeBridge, integrationId: number, chatId = 'chat-1'): Promise<number> {
  const id = `in-${chatId}-${Math.random()}`;
  await bridge.inbound({ id, chatId, sender: { socialId: chatId } });
  const row = await db()
    .selectFrom('messages')
    .select('lead_id')
    .where('integration_id', '=', integrationId)
    .where('external_id', '=', id)
    .executeTakeFirstOrThrow();
  return row.lead_id;
}

describe('connecting a personal account', () => {
  it('is `connecting` with a bridge token shown once (stored hashed), and a bridge URL', async () => {
    const { id, token, body } = await connectPersonal(h, owner);
    expect(body).toMatchObject({
      type: 'msgrb_personal',
      status: 'connecting',
      bridge: { url: expect.stringMatching(new RegExp(`/channels/bridge/${id}$`)) },
    });
    expect(token).toMatch(/^pbt_[A-Za-z0-9_-]{43}$/);
    const stored = await db().selectFrom('bridges').selectAll().where('integration_id', '=', id).executeTakeFirstOrThrow();
    expect(stored.token_hash).not.toContain(token);
    const list = await h.request({ method: 'GET', url: '/v1.3/integrations', token: owner.access });
    expect(list.body).not.toContain(token);
    expect((await bridgeState(id)).json()).toEqual({ protocol: 1, status: 'connecting', online: false, prompt: null });
  });

  it("refuses a wrong token before the upgrade (401), and another integration's token", async () => {
    const a = await connectPersonal(h, owner);
    const b = await connectPersonal(h, owner, 'msgra');
    await expect(FakeBridge.connect(base, a.id, 'pbt_wrong')).rejects.toThrow('401');
    await expect(FakeBridge.connect(base, a.id, b.token)).rejects.toThrow('401');
    await expect(FakeBridge.connect(base, 999_999, a.token)).rejects.toThrow('401');
    const media = await fetch(`${base}/channels/bridge/${a.id}/media`, {
      method: 'POST',
      headers: { authorization: `Bearer ${b.token}`, 'content-type': 'image/png' },
      body: 'x',
    });
    expect(media.status).toBe(401);
    expect(
      (await db().selectFrom('bridges').select('conn_id').where('integration_id', '=', a.id).executeTakeFirstOrThrow()).conn_id,
    ).toBeNull();
    expect(await db().selectFrom('files').selectAll().execute()).toHaveLength(0);
  });

  it('shows the QR with its expiry, then the 2FA prompt; answers go to the bridge; a refusal is 422; logged in -> active', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await FakeBridge.connect(base, id, token);
    const expiresAt = h.clock.now() + 30_000;
    bridge.send({ type: 'login.qr', data: 'tg://login?token=abc', expiresAt });
    await vi.waitFor(async () =>
      expect((await bridgeState(id)).json().prompt).toEqual({ kind: 'qr', data: 'tg://login?token=abc', expiresAt, expired: false }),
    );
    expect((await bridgeState(id)).json().online).toBe(true);
    h.clock.advance(30_000);
    expect((await bridgeState(id)).json().prompt.expired).toBe(true);

    bridge.send({ type: 'login.prompt', kind: 'password', hint: 'pet name' });
    await vi.waitFor(async () =>
      expect((await bridgeState(id)).json().prompt).toEqual({ kind: 'password', hint: 'pet name', expired: false }),
    );
    bridge.loginCheck = (answer) => (answer.value === 'rex' ? undefined : 'PASSWORD_HASH_INVALID');
    const answer = (value: string) =>
      h.request({
        method: 'POST',
        url: `/v1.3/integrations/${id}/bridge/login`,
        token: owner.access,
        payload: { kind: 'password', value },
      });
    const wrong = await answer('cat');
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json()).toMatchObject({ code: 'channel_rejected', error: 'PASSWORD_HASH_INVALID' });
    expect((await answer('rex')).statusCode).toBe(200);
    expect(bridge.acted.map((m) => [m.type, m.kind, m.value])).toEqual([
      ['login.answer', 'password', 'cat'],
      ['login.answer', 'password', 'rex'],
    ]);
    // Answers do not stay in the database.
    expect(await db().selectFrom('bridge_requests').selectAll().where('integration_id', '=', id).execute()).toEqual([]);

    expect((await integration(id)).status).toBe('connecting');
    await bridge.login({ login: 'alice', externalId: '777', avatar: 'https://cdn.example/a.jpg' });
    await waitForStatus(h, id, 'active');
    expect(await integration(id)).toMatchObject({
      login: 'alice',
      external_id: '777',
      identifier: '777',
      avatar: 'https://cdn.example/a.jpg',
    });
    expect((await bridgeState(id)).json()).toMatchObject({ status: 'active', online: true, prompt: null });

    // A manager sees the state but cannot answer prompts or rotate tokens.
    const manager = await createManager(h, owner, {});
    expect((await h.request({ method: 'GET', url: `/v1.3/integrations/${id}/bridge`, token: manager.access })).statusCode).toBe(200);
    for (const url of [`/v1.3/integrations/${id}/bridge/login`, `/v1.3/integrations/${id}/bridge/token`]) {
      const res = await h.request({
        method: 'POST',
        url,
        token: manager.access,
        payload: url.endsWith('login') ? { kind: 'code', value: '1' } : {},
      });
      expect(res.statusCode, url).toBe(403);
    }
    bridge.send({ type: 'session', state: 'lost', reason: 'AUTH_KEY_UNREGISTERED' });
    await waitForStatus(h, id, 'auth failure');
    await bridge.close();
    await waitForStatus(h, id, 'auth failure');
  });

  it('is not active once its bridge is gone (connecting), and active again when it is back', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    await bridge.drop();
    await waitForStatus(h, id, 'connecting');
    await bridge.reconnect();
    await bridge.login();
    await waitForStatus(h, id, 'active');
    await bridge.close();
  });
});

describe('inbound messages and media', () => {
  it('stores an inbound message once whatever the duplicates, acknowledging each', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    await bridge.inbound({ id: 'm-1', chatId: 'c-9', sender: { socialId: 'u-9', name: 'Ann' }, text: 'hi there' });
    await bridge.inbound({ id: 'm-1', chatId: 'c-9', sender: { socialId: 'u-9', name: 'Ann' }, text: 'hi there' });
    const rows = await messagesOf(id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ external_id: 'm-1', incoming: 1, text: 'hi there' });
    expect(bridge.received.filter((m) => m.type === 'ack').map((m) => m.id)).toEqual(['m-1', 'm-1']);
    // The text of a NUL escape, typed by a person, is ordinary text.
    await bridge.inbound({ id: 'm-2', chatId: 'c-9', sender: { socialId: 'u-9' }, text: 'type \\u0000 to test' });
    expect((await messagesOf(id)).at(-1)!.text).toBe('type \\u0000 to test');
    await bridge.close();
  });

  it("keeps media in Parley's storage (same token), named in an inbound attachment", async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 1)]);
    const res = await bridge.uploadMedia(png, 'image/png', 'photo 1.png');
    expect(res.status).toBe(200);
    const file = (await res.json()) as { url: string; name: string; size: number; mime: string };
    expect(file).toMatchObject({ name: 'photo 1.png', size: png.length, mime: 'image/png' });
    const download = await fetch(`${base}${file.url}`);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(png);
    await bridge.inbound({ id: 'media-1', text: '', attachments: [{ type: 'photo', url: file.url, name: file.name, size: file.size }] });
    const [row] = await messagesOf(id);
    expect(JSON.parse(row!.attachments)).toEqual([{ type: 'photo', url: file.url, text: 'photo 1.png', filesize: png.length }]);
    await bridge.close();
  });
});

describe('sends through the bridge', () => {
  it('stores what the bridge accepted (its ids); a refusal is 422, a retryable failure 502, silence 504 — nothing stored', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const leadId = await leadVia(bridge, id);
    const ok = await send(leadId, 'order shipped');
    expect(ok.statusCode, ok.body).toBe(200);
    expect(bridge.acted.at(-1)).toMatchObject({ type: 'send', chatId: 'chat-1', text: 'order shipped', deadline: expect.any(Number) });
    const stored = (await messagesOf(id)).filter((m) => !m.incoming);
    expect(stored.map((m) => [m.external_id, m.text])).toEqual([[`out-${bridge.acted.at(-1)!.requestId}`, 'order shipped']]);

    const before = await messagesOf(id);
    bridge.mode = { refuse: 'USER_IS_BLOCKED' };
    const refused = await send(leadId, 'x');
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toBe('USER_IS_BLOCKED');
    bridge.mode = { retryable: 'FLOOD_WAIT_3' };
    expect((await send(leadId, 'x')).statusCode).toBe(502);
    bridge.mode = { silent: true };
    const silent = await send(leadId, 'x');
    expect(silent.statusCode).toBe(504);
    // The bridge answers after the deadline: not stored.
    const [late] = [...bridge.unanswered.keys()];
    bridge.answer(late!, { ok: true, externalIds: ['too-late'] });
    await bridge.inbound({ id: 'sync-1' });
    expect((await messagesOf(id)).filter((m) => !m.incoming)).toEqual(before.filter((m) => !m.incoming));
    expect(await db().selectFrom('bridge_requests').selectAll().where('integration_id', '=', id).execute()).toEqual([]);
    await bridge.close();
  });

  it('answers 502 channel_offline with no bridge connected, or one not logged in', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const leadId = await leadVia(bridge, id);
    await bridge.close();
    await waitForStatus(h, id, 'connecting');
    const offline = await send(leadId, 'x');
    expect(offline.statusCode).toBe(502);
    expect(offline.json().code).toBe('channel_offline');
    const again = await FakeBridge.connect(base, id, token);
    expect((await send(leadId, 'x')).json().code).toBe('channel_offline');
    expect(again.acted).toEqual([]);
    expect(await db().selectFrom('bridge_requests').selectAll().execute()).toEqual([]);
    await again.close();
  });

  it('after a drop and reconnect: the request comes again with its id and is sent once; an unacknowledged inbound comes again and is stored once', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const leadId = await leadVia(bridge, id);
    h.services.deps.config.sendTimeoutMs = 5000;
    try {
      bridge.mode = { silent: true };
      const sending = send(leadId, 'survives a drop');
      const first = await bridge.next((m) => m.type === 'send');
      bridge.inboundUnacked({ id: 'unacked-1', text: 'sent while dropping' });
      await vi.waitFor(async () => expect((await messagesOf(id)).some((m) => m.external_id === 'unacked-1')).toBe(true));
      await bridge.drop();
      const again = bridge.next((m) => m.type === 'send');
      await bridge.reconnect();
      await bridge.login();
      expect((await again).requestId).toBe(first.requestId);
      bridge.answer(first.requestId, { ok: true, externalIds: ['sent-once'] });
      const res = await sending;
      expect(res.statusCode, res.body).toBe(200);
      expect(bridge.acted.filter((m) => m.type === 'send')).toHaveLength(1);
      const rows = await messagesOf(id);
      expect(rows.filter((m) => m.external_id === 'sent-once')).toHaveLength(1);
      expect(rows.filter((m) => m.external_id === 'unacked-1')).toHaveLength(1);
      expect(bridge.received.filter((m) => m.type === 'ack' && m.id === 'unacked-1')).toHaveLength(2);
    } finally {
      h.services.deps.config.sendTimeoutMs = 300;
    }
    await bridge.close();
  });

  it('checks contacts and reads profiles through the bridge', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    bridge.contacts.add('+380501234567');
    const check = (chatId: string) =>
      h.request({ method: 'POST', url: '/v1.3/messaging/check-contact', token: owner.access, payload: { saId: id, chatId } });
    expect((await check('+380501234567')).json()).toEqual({ exists: true });
    expect((await check('+380500000000')).statusCode).toBe(404);
    expect(bridge.acted.map((m) => [m.type, m.contact])).toEqual([
      ['check', '+380501234567'],
      ['check', '+380500000000'],
    ]);
    await bridge.close();
  });
});

describe('bad input from a bridge', () => {
  const cases: Array<[string, (bridge: FakeBridge, id: number) => void, number, RegExp]> = [
    ['not JSON', (b) => b.send('{nope'), 4400, /not JSON/],
    ['an unknown message', (b) => b.send({ type: 'inbound', id: 'x' }), 4400, /not a valid bridge message/],
    [
      'a NUL character',
      (b) => b.send({ type: 'inbound', id: 'n-1', chatId: 'c', datetime: 1, sender: { socialId: 'u' }, text: 'a\u0000b' }),
      4400,
      /NUL/,
    ],
    [
      'a message over 64 KiB',
      (b) => b.send({ type: 'inbound', id: 'big', chatId: 'c', datetime: 1, sender: { socialId: 'u' }, text: 'x'.repeat(70_000) }),
      1009,
      /^(|Max payload size exceeded)$/,
    ],
    [
      "another integration's message",
      (b, id) => b.send({ type: 'inbound', integrationId: id + 1, id: 'o-1', chatId: 'c', datetime: 1, sender: { socialId: 'u' } }),
      4403,
      /another integration/,
    ],
  ];
  for (const [what, act, code, reason] of cases) {
    it(`closes on ${what} with a reason; nothing stored`, async () => {
      const { id, token } = await connectPersonal(h, owner);
      const bridge = await activeBridge(h, base, id, token);
      act(bridge, id);
      const closed = await bridge.closed;
      expect(closed.code).toBe(code);
      expect(closed.reason).toMatch(reason);
      expect(await messagesOf(id)).toEqual([]);
    });
  }

  it('wants hello first, in a protocol it speaks', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const early = await FakeBridge.connect(base, id, token, { hello: false });
    early.send({ type: 'session', state: 'active' });
    expect(await early.closed).toEqual({ code: 4400, reason: 'hello first' });
    const future = await FakeBridge.connect(base, id, token, { hello: false });
    future.send({ type: 'hello', protocol: 2 });
    expect((await future.closed).code).toBe(4406);
    expect((await integration(id)).status).toBe('connecting');
  });

  it("refuses an answer to another integration's request", async () => {
    const a = await connectPersonal(h, owner);
    const b = await connectPersonal(h, owner);
    const bridgeA = await activeBridge(h, base, a.id, a.token);
    const bridgeB = await activeBridge(h, base, b.id, b.token);
    const leadId = await leadVia(bridgeA, a.id);
    bridgeA.mode = { silent: true };
    const sending = send(leadId, 'for A only');
    const request = await bridgeA.next((m) => m.type === 'send');
    const refused = bridgeB.next((m) => m.type === 'error');
    bridgeB.send({ type: 'result', requestId: request.requestId, ok: true, externalIds: ['forged'] });
    expect((await refused).code).toBe('not_your_request');
    bridgeA.answer(request.requestId, { ok: true, externalIds: ['genuine'] });
    expect((await sending).json()[0].messageId).toBeDefined();
    expect((await messagesOf(a.id)).map((m) => m.external_id)).toContain('genuine');
    expect((await messagesOf(a.id)).map((m) => m.external_id)).not.toContain('forged');
    await bridgeA.close();
    await bridgeB.close();
  });

  it('disconnecting the integration closes its bridge for good (4410) and refuses its token', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const del = await h.request({ method: 'DELETE', url: `/v1.3/integrations/${id}`, token: owner.access });
    expect(del.statusCode).toBe(200);
    expect(await bridge.closed).toEqual({ code: 4410, reason: 'integration disconnected' });
    await expect(FakeBridge.connect(base, id, token)).rejects.toThrow('401');
  });

  it('rotating the token disconnects the bridge and refuses the old token; only the owner may', async () => {
    const { id, token } = await connectPersonal(h, owner);
    const bridge = await activeBridge(h, base, id, token);
    const rotated = await h.request({ method: 'POST', url: `/v1.3/integrations/${id}/bridge/token`, token: owner.access, payload: {} });
    expect(rotated.statusCode).toBe(200);
    const fresh = rotated.json().token as string;
    expect(fresh).not.toBe(token);
    expect((await bridge.closed).code).toBe(4401);
    await expect(FakeBridge.connect(base, id, token)).rejects.toThrow('401');
    const next = await FakeBridge.connect(base, id, fresh);
    await next.close();
  });
});

if (DIALECT === 'postgres') {
  describe('bridge wake-ups across processes (LISTEN)', () => {
    // A server's harness: its hub LISTENs for the NOTIFYs of other processes on the database.
    let hl: Harness;
    let baseL: string;
    let ownerL: SignedUp;
    beforeAll(async () => {
      ({ h: hl, base: baseL, owner: ownerL } = await openBridgeSuite(300, { listen: true }));
    });
    afterAll(() => hl?.close());

    it("another installation's nudges in the same database (another schema) do not reach this one's bridges", async () => {
      const a = await connectPersonal(hl, ownerL);
      const b = await connectPersonal(hl, ownerL);
      const bridgeA = await activeBridge(hl, baseL, a.id, a.token);
      const bridgeB = await activeBridge(hl, baseL, b.id, b.token);
      // In one transaction, heard in this order: another schema's token rotation of an integration
      // with A's id, then this schema's of B (what rotating B's token sends, bridge.repo.ts `notify`).
      await sql`select pg_notify('parley_bridge', ${`another_installation x:${a.id}`}),
        pg_notify('parley_bridge', current_schema() || ${` x:${b.id}`})`.execute(hl.database.db.kysely);
      expect((await bridgeB.closed).code).toBe(4401);
      // A's was handled before B's: A is still connected and served.
      const closedA = bridgeA.closed.then(({ code }) => `closed (${code})`);
      expect(await Promise.race([bridgeA.inbound({ text: 'still here' }).then(() => 'served'), closedA])).toBe('served');
      await bridgeA.close();
    });
  });
}
