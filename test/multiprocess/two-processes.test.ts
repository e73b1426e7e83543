import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeTelegram } from '../helpers/fake-telegram.js';
import { call, withTimeout } from '../helpers/server-process.js';
import { register, SocketClient, startCluster, widgetConversation, wsUrl, type Cluster } from './cluster.js';

const REFRESH_TTL_S = 8;
const METRICS_TOKEN = 'multi-process-metrics-token-0123456789';
let c: Cluster;
let tg: FakeTelegram;
beforeAll(async () => {
  tg = await FakeTelegram.start();
  c = await startCluster({
    PARLEY_API_RATE_LIMIT: '60',
    PARLEY_LOGIN_MAX_FAILURES: '3',
    PARLEY_TELEGRAM_API_URL: tg.url,
    PARLEY_TELEGRAM_POLL_TIMEOUT: '1',
    // Refresh tokens rotate after half their life (the servers read the real clock).
    PARLEY_REFRESH_TTL: String(REFRESH_TTL_S),
    PARLEY_METRICS_TOKEN: METRICS_TOKEN,
  });
}, 120_000);
afterAll(async () => {
  await c?.close();
  await tg?.close();
});

const db = () => c.database.db.kysely;

describe('two processes on one PostgreSQL database', () => {
  it('1. the same customId sent through both at once is sent and stored once', async () => {
    const owner = await register(c.a);
    const conv = await widgetConversation(c, owner);
    const keys = Array.from({ length: 10 }, (_, i) => `order-${i}`);
    const answers = await Promise.all(
      keys.flatMap((customId) =>
        [c.a, c.b].map((base) =>
          call(base, 'POST', `/v1.3/messaging/${conv.leadId}/send`, {
            token: owner.access,
            body: { message: { text: customId }, customId },
          }),
        ),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    for (let i = 0; i < keys.length; i++) expect(answers[2 * i]!.body[0].messageId).toBe(answers[2 * i + 1]!.body[0].messageId);
    const stored = await db()
      .selectFrom('messages')
      .select('custom_id')
      .where('lead_id', '=', conv.leadId)
      .where('custom_id', 'is not', null)
      .execute();
    expect(stored.map((m) => m.custom_id).sort()).toEqual([...keys].sort());
  });

  it('2. limits hold across processes: API requests per token, and a login locked on one is locked on the other', async () => {
    const user = await register(c.a);
    const answers = [];
    for (let i = 0; i < 8; i++) {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, (_, j) => call((i * 10 + j) % 2 ? c.b : c.a, 'GET', '/v1.3/account/me', { token: user.access })),
        )),
      );
    }
    // The token made one request (register is not counted): 60 per minute in all, though each
    // process leases a few of them at a time (docs/operations.md): never more in all.
    expect(answers.filter((r) => r.status === 200)).toHaveLength(60);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(20);

    const victim = await register(c.a);
    for (const base of [c.a, c.b, c.a]) {
      expect((await call(base, 'POST', '/v1.3/auth/login', { body: { login: victim.login, pass: 'wrong guess' } })).status).toBe(401);
    }
    expect((await call(c.b, 'POST', '/v1.3/auth/login', { body: { login: victim.login, pass: victim.pass } })).status).toBe(429);
    expect((await call(c.a, 'POST', '/v1.3/auth/login', { body: { login: victim.login, pass: victim.pass } })).status).toBe(429);
  });

  it('3. a visitor connected to A gets the reply and the typing sent through B', async () => {
    const owner = await register(c.a);
    const conv = await widgetConversation(c, owner);
    const socket = await SocketClient.open(wsUrl(c.a, `/widget/v1/socket?token=${conv.visitorToken}`));
    await withTimeout(
      socket.next((m) => m.type === 'ready'),
      5000,
      'ready',
    );
    for (let i = 0; i < 5; i++) {
      expect(
        (await call(c.b, 'POST', `/v1.3/widget/leads/${conv.leadId}/typing`, { token: owner.access, body: { typing: true } })).status,
      ).toBe(200);
      const sent = await call(c.b, 'POST', `/v1.3/messaging/${conv.leadId}/send`, {
        token: owner.access,
        body: { message: { text: `reply ${i}` } },
      });
      expect(sent.status).toBe(200);
      await withTimeout(
        socket.next((m) => m.type === 'message' && m.message.text === `reply ${i}`),
        5000,
        `reply ${i} on A`,
      );
    }
    expect(socket.messages.filter((m) => m.type === 'typing')).toHaveLength(5);
    socket.close();
  });

  it('4. a file uploaded through A is served and sent through B', async () => {
    const owner = await register(c.a);
    const conv = await widgetConversation(c, owner);
    const data = crypto.randomBytes(300_000);
    const form = new FormData();
    form.append('said', String(conv.integrationId));
    form.append('media', new Blob([data], { type: 'application/octet-stream' }), 'report.bin');
    const up = await fetch(`${c.a}/v1.3/messaging/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.access}` },
      body: form,
    });
    expect(up.status).toBe(200);
    const uploaded = (await up.json()) as { type: string; media: { path: string } };
    const got = await fetch(c.b + uploaded.media.path);
    expect(got.status).toBe(200);
    expect(Buffer.compare(Buffer.from(await got.arrayBuffer()), data)).toBe(0);
    const sent = await call(c.b, 'POST', `/v1.3/messaging/${conv.leadId}/send`, {
      token: owner.access,
      body: { message: { text: 'the report', attachment: { type: uploaded.type, media: uploaded.media } } },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });

  it('5. a Telegram bot is long-polled by one process at a time (no 409 Conflict), every update stored once', async () => {
    const owner = await register(c.a);
    const token = '8001:AAH-multi-process';
    tg.addBot(token, { id: 8001, username: 'mp_bot', first_name: 'MP' });
    const bot = await call(c.a, 'POST', '/v1.3/integrations', { token: owner.access, body: { type: 'msgrb_bot', credentials: { token } } });
    expect(bot.status).toBe(200);
    const polls = () => tg.callsOf('getUpdates').filter((x) => x.token === token).length;
    for (let i = 1; i <= 3; i++) {
      tg.chats.set(String(950_000 + i), { first_name: 'Ada' });
      tg.queueUpdate(token, {
        message: {
          message_id: i,
          date: 1772366400 + i,
          chat: { id: 950_000 + i, type: 'private' },
          from: { id: 950_000 + i, is_bot: false, first_name: 'Ada' },
          text: `m${i}`,
        },
      });
    }
    const stored = () => db().selectFrom('messages').select('text').where('integration_id', '=', bot.body.id).execute();
    // Both servers look for new bots every 5 s; then several 1 s long polls go by.
    const deadline = Date.now() + 20_000;
    while (((await stored()).length < 3 || polls() < 8) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect((await stored()).map((m) => m.text).sort()).toEqual(['m1', 'm2', 'm3']);
    expect(polls()).toBeGreaterThanOrEqual(8);
    expect(tg.conflicts).toBe(0);
    const leases = await db().selectFrom('leases').selectAll().where('name', '=', `telegram-poll:${bot.body.id}`).execute();
    expect(leases).toHaveLength(1);
  }, 40_000);

  it('6. realtime clients catching up while messages arrive through B: all get ready, A stays responsive', async () => {
    const owner = await register(c.a);
    const conv = await widgetConversation(c, owner);
    const from = (
      await db()
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirstOrThrow()
    ).id as number;
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing && i < 400; i++) {
        await call(c.b, 'POST', '/widget/v1/messages', { token: conv.visitorToken, body: { clientId: `rt-${i}`, text: `m${i}` } });
      }
    })();
    const clients = await Promise.all(
      Array.from({ length: 40 }, () => SocketClient.open(wsUrl(c.a, `/v1.3/realtime?token=${owner.access}&lastEventId=${from}`))),
    );
    await withTimeout(Promise.all(clients.map((cl) => cl.next((m) => m.type === 'ready'))), 15_000, 'every client ready');
    const health = await withTimeout(call(c.a, 'GET', '/health'), 2000, 'A /health');
    expect(health.status).toBe(200);
    writing = false;
    await writer;
    for (const cl of clients) {
      const ids = cl.messages.filter((m) => m.type === 'event').map((m) => m.id as number);
      expect(new Set(ids).size).toBe(ids.length);
      cl.close();
    }
  }, 40_000);

  it("8. one refresh token presented to both at once: the family ends, the winner's successor too", async () => {
    const race = async () => {
      const { refresh } = await register(c.a);
      // The servers read the real clock: wait until the token has less than half of its life left
      // (it then rotates) but well before it expires, whatever time registering took.
      const exp = (JSON.parse(Buffer.from(refresh.split('.')[1]!, 'base64url').toString()) as { exp: number }).exp * 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, exp - REFRESH_TTL_S * 1000 * 0.4 - Date.now())));
      const answers = await Promise.all(
        [c.a, c.b].map((base) => call(base, 'POST', '/v1.3/auth/tokens', { body: { refreshToken: refresh } })),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([200, 401]);
      const successor = answers.find((r) => r.status === 200)!.body.refreshToken.token as string;
      expect((await call(c.a, 'POST', '/v1.3/auth/tokens', { body: { refreshToken: successor } })).status).toBe(401);
    };
    await Promise.all(Array.from({ length: 5 }, race));
  });

  it("11. A's cached lead lists outlive writes to other accounts through B, and follow B's writes to their own", async () => {
    const mine = await register(c.a);
    const theirs = await register(c.a);
    const myChat = await widgetConversation(c, mine);
    const theirChat = await widgetConversation(c, theirs);
    const inbox = async () => {
      const res = await call(c.a, 'GET', '/v1.3/leads/inbox', { token: mine.access });
      expect(res.status).toBe(200);
      return (res.body as Array<{ id: number; details: string }>).map((l) => `${l.id}:${l.details}`);
    };
    const cacheOfA = async () => {
      const res = await fetch(`${c.a}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      const text = await res.text();
      const count = (result: string) =>
        Number(new RegExp(`^parley_lead_read_cache_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { hit: count('hit'), miss: count('miss') };
    };
    const first = await inbox();
    expect(first).toEqual([`${myChat.leadId}:`]);
    const before = await cacheOfA();
    // The other account changes through B: its lead, and a new message of its visitor.
    expect((await call(c.b, 'PUT', `/v1.3/leads/${theirChat.leadId}`, { token: theirs.access, body: { details: 'theirs' } })).status).toBe(
      200,
    );
    const said = await call(c.b, 'POST', '/widget/v1/messages', {
      token: theirChat.visitorToken,
      body: { clientId: crypto.randomUUID(), text: 'more' },
    });
    expect(said.status).toBe(200);
    expect(await inbox()).toEqual(first);
    expect(await cacheOfA()).toEqual({ hit: before.hit + 1, miss: before.miss });
    // The account's own lead changes through B: A reads it again and answers the change.
    expect((await call(c.b, 'PUT', `/v1.3/leads/${myChat.leadId}`, { token: mine.access, body: { details: 'through B' } })).status).toBe(
      200,
    );
    expect(await inbox()).toEqual([`${myChat.leadId}:through B`]);
    expect(await cacheOfA()).toEqual({ hit: before.hit + 1, miss: before.miss + 1 });
  });
});
