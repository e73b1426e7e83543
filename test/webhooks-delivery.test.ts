import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { DIALECT } from './helpers/database.js';
import { openDatabase } from '../src/db/database.js';
import { webhookFixture } from './helpers/webhook-fixture.js';
import { DeliveryWorker, RETRY_DELAYS_MS } from '../src/webhooks/delivery-worker.js';
import type { KyselyPlugin } from 'kysely';
import { recordEvent } from '../src/events/outbox.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import type { ApiVersion } from '../src/api/versions.js';

let h: Harness;
const fx = webhookFixture(() => h);
const { receiver, worker, account } = fx;
beforeAll(async () => {
  h = await createHarness({
    env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1', PARLEY_WEBHOOK_RETRY_SCALE: '0.001', PARLEY_WEBHOOK_TIMEOUT_MS: '2000' },
  });
});
afterEach(async () => {
  await fx.stopAll();
});
afterAll(() => h.close());

const db = () => h.database.db.kysely;

async function register(owner: SignedUp, url: string, version: ApiVersion = 'v1.3', events?: string[]) {
  const res = await h.request({ method: 'POST', url: `/${version}/webhooks`, token: owner.access, payload: { url, events } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { id: number; secret: string };
}

let seq = 0;
function message(socialId: string): IncomingMessage {
  seq += 1;
  return {
    externalId: `wm-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: `Customer ${socialId}` },
    channel: { externalId: `chat-${socialId}`, type: 'message' },
    text: `text ${seq}`,
  };
}

const eventIds = async (accountId: number) =>
  await db().selectFrom('events').select(['id', 'type', 'lead_id']).where('account_id', '=', accountId).orderBy('id').execute();

describe('webhook delivery', () => {
  it('signs each delivery per Standard Webhooks (verified independently) and sends the v1.3 payload', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    const hook = await register(owner, `${r.url}/hook`);
    const result = await h.services.ingest.ingest(integration, message('alice'));
    expect(await worker().drain()).toBe(3);
    expect(r.received).toHaveLength(3);
    const verifier = new Webhook(hook.secret);
    const events = await eventIds(owner.accountId);
    for (const [i, got] of r.received.entries()) {
      const payload = verifier.verify(got.body, got.headers as Record<string, string>) as Record<string, unknown>;
      expect(payload).toMatchObject({ type: events[i].type, accountId: owner.accountId });
      expect(got.headers['webhook-id']).toBe(`msg_${events[i].id}`);
      expect(got.headers['content-type']).toBe('application/json');
    }
    expect(JSON.parse(r.received[2].body)).toMatchObject({
      type: 'message.incoming',
      leadId: result.leadId,
      isNewLead: true,
      message: { incoming: true },
    });
    // A tampered body or another secret fails verification.
    expect(() => verifier.verify(`${r.received[0].body} `, r.received[0].headers as Record<string, string>)).toThrow();
    expect(() =>
      new Webhook(`whsec_${Buffer.alloc(24, 1).toString('base64')}`).verify(
        r.received[0].body,
        r.received[0].headers as Record<string, string>,
      ),
    ).toThrow();
    const rows = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).execute();
    expect(rows.every((d) => d.status === 'delivered' && d.attempts === 1 && d.last_status_code === 200)).toBe(true);
  });

  it('a receiver failing N times then recovering gets every event, in order per lead, same webhook-id on retries', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    r.respond = (n) => (n < 4 ? 503 : 200);
    await register(owner, `${r.url}/hook`);
    for (const who of ['bob', 'bob', 'carol', 'bob', 'carol']) await h.services.ingest.ingest(integration, message(who));
    const events = await eventIds(owner.accountId);
    const w = worker();
    for (let round = 0; round < 30; round++) {
      await w.drain();
      h.clock.advance(RETRY_DELAYS_MS[6] * 0.001 + 1);
    }
    const ok = r.received.filter((x) => x.status === 200);
    const delivered = ok.map((x) => x.headers['webhook-id']);
    expect(new Set(delivered).size).toBe(events.length);
    expect(delivered.sort()).toEqual(events.map((e) => `msg_${e.id}`).sort());
    // Per lead, successful deliveries arrive in event order.
    for (const leadId of new Set(events.filter((e) => e.lead_id !== null).map((e) => e.lead_id))) {
      const expected = events.filter((e) => e.lead_id === leadId).map((e) => `msg_${e.id}`);
      expect(delivered.length && ok.map((x) => x.headers['webhook-id']).filter((id) => expected.includes(id as string))).toEqual(expected);
    }
    // Retries of a failed message carry its webhook-id; the body is the same too.
    const failed = r.received.filter((x) => x.status === 503);
    expect(failed).toHaveLength(4);
    for (const f of failed) {
      const later = ok.find((x) => x.headers['webhook-id'] === f.headers['webhook-id']);
      expect(later?.body).toBe(f.body);
    }
    const attempts = await db()
      .selectFrom('delivery_attempts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(attempts.n)).toBeGreaterThanOrEqual(r.received.length);
  });

  it('retries on the §7 schedule (scaled), then dead; the log API shows it; retry sends it again', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    r.respond = () => 500;
    const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['customer.created']);
    await h.services.ingest.ingest(integration, message('dave'));
    const w = worker();
    const start = h.clock.now();
    await w.drain();
    const dues: number[] = [];
    for (let i = 0; i < 10; i++) {
      const d = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
      if (d.status !== 'pending') break;
      dues.push(d.next_attempt_at - h.clock.now());
      h.clock.set(d.next_attempt_at - 1);
      expect(await w.runOnce()).toBe(0); // not due yet
      h.clock.set(d.next_attempt_at);
      expect(await w.runOnce()).toBe(1);
    }
    expect(dues).toEqual(RETRY_DELAYS_MS.map((ms) => Math.round(ms * 0.001)));
    expect(r.received).toHaveLength(8);
    expect(h.clock.now()).toBeGreaterThan(start);
    const list = await h.request({ method: 'GET', url: `/v1.3/webhooks/${hook.id}/deliveries`, token: owner.access });
    expect(list.statusCode).toBe(200);
    const [entry] = list.json();
    expect(entry).toMatchObject({
      status: 'dead',
      attempts: 8,
      type: 'customer.created',
      lastStatusCode: 500,
      lastError: 'HTTP 500: nope',
      nextAttemptAt: null,
    });
    expect(entry.log).toHaveLength(8);
    expect(entry.log[0]).toMatchObject({ statusCode: 500, error: 'HTTP 500: nope' });

    r.respond = () => 200;
    const retry = await h.request({ method: 'POST', url: `/v1.3/webhooks/${hook.id}/deliveries/${entry.id}/retry`, token: owner.access });
    expect(retry.statusCode, retry.body).toBe(200);
    expect(retry.json()).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await w.drain()).toBe(1);
    expect(r.received.at(-1)!.headers['webhook-id']).toBe(entry.webhookMessageId);
    const after = await h.request({ method: 'GET', url: `/v1.3/webhooks/${hook.id}/deliveries`, token: owner.access });
    expect(after.json()[0]).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(after.json()[0].log).toHaveLength(9);
    const missing = await h.request({ method: 'POST', url: `/v1.3/webhooks/${hook.id}/deliveries/999999/retry`, token: owner.access });
    expect(missing.statusCode).toBe(404);
  });

  it('disables an endpoint failing for 5 days straight; its deliveries wait; re-enabling resumes them', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    r.respond = () => 500;
    const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['customer.created']);
    const w = worker();
    await h.services.ingest.ingest(integration, message('erin'));
    await w.drain();
    h.clock.advance(5 * 24 * 3600_000);
    await h.services.ingest.ingest(integration, message('frank'));
    await w.drain();
    const row = await db().selectFrom('webhooks').selectAll().where('id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.status).toBe(0);
    const sent = r.received.length;
    h.clock.advance(24 * 3600_000);
    expect(await w.drain()).toBe(0);
    expect(r.received).toHaveLength(sent);
    r.respond = () => 200;
    const login = await h.request({ method: 'POST', url: '/v1.3/auth/login', payload: { login: owner.login, pass: owner.pass } });
    const put = await h.request({
      method: 'PUT',
      url: `/v1.3/webhooks/${hook.id}`,
      token: login.json().accessToken.token,
      payload: { status: 1 },
    });
    expect(put.json()).toMatchObject({ status: 1 });
    await w.drain();
    const states = await db().selectFrom('deliveries').select('status').where('webhook_id', '=', hook.id).execute();
    expect(
      states.map((s) => s.status),
      JSON.stringify(await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).execute()),
    ).toEqual(['delivered', 'delivered']);
  });

  it('v1.1 webhooks get no accountId and no message.outgoing; v1.2 get both', async () => {
    const { owner, integration } = await account();
    const r11 = await receiver();
    const r12 = await receiver();
    await register(owner, `${r11.url}/a`, 'v1.1');
    await register(owner, `${r12.url}/b`, 'v1.2');
    const { leadId } = await h.services.ingest.ingest(integration, message('gina'));
    await db()
      .transaction()
      .execute((trx) =>
        recordEvent(
          trx,
          { accountId: owner.accountId, type: 'message.outgoing', leadId, payload: { leadId, message: { customId: 'c-1' } } },
          h.clock.now(),
        ),
      );
    await worker().drain();
    expect(r11.received.map((x) => JSON.parse(x.body).type)).toEqual(['customer.created', 'lead.created', 'message.incoming']);
    expect(r11.received.every((x) => !('accountId' in JSON.parse(x.body)))).toBe(true);
    expect(r12.received.map((x) => JSON.parse(x.body).type)).toEqual([
      'customer.created',
      'lead.created',
      'message.incoming',
      'message.outgoing',
    ]);
    expect(r12.received.every((x) => JSON.parse(x.body).accountId === owner.accountId)).toBe(true);
    expect(JSON.parse(r12.received[3].body).message.customId).toBe('c-1');
  });

  it('writes deliveries in the transaction of the event: a rolled-back change leaves none', async () => {
    const { owner } = await account();
    const r = await receiver();
    const hook = await register(owner, `${r.url}/hook`);
    await expect(
      db()
        .transaction()
        .execute(async (trx) => {
          await recordEvent(
            trx,
            { accountId: owner.accountId, type: 'lead.changed', leadId: 1, payload: { leadId: 1, changes: [] } },
            h.clock.now(),
          );
          throw new Error('change failed');
        }),
    ).rejects.toThrow('change failed');
    expect(await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).execute()).toEqual([]);
  });

  it('a delivery leased by a process that died is delivered by another once the lease expires', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['customer.created']);
    await h.services.ingest.ingest(integration, message('hank'));
    const dead = worker({}, 'dead-process');
    const claimed = await dead.claim(10);
    expect(claimed).toHaveLength(1); // ... and the process dies without sending
    const other = worker({}, 'survivor');
    expect(await other.runOnce()).toBe(0); // leased: not claimable
    h.clock.advance(h.config.webhookTimeoutMs + 30_000 + 1);
    expect(await other.runOnce()).toBe(1);
    expect(r.received).toHaveLength(1);
    const row = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, lease_until: null });
  });

  // A round records and claims in one transaction (PostgreSQL: one call of parley_webhook_round),
  // which a failed claim rolls back whole: the outcomes are then recorded one by one, once each.
  it('a round failing in its claim records its outcomes once (no repeated attempts)', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['message.incoming']);
    // Three leads: their deliveries go out together, and are held so they finish in one round.
    for (const who of ['kim', 'lou', 'max']) await h.services.ingest.ingest(integration, message(who));
    r.hold = true;
    // The claim of the first round that records fails once: SQLite after the record's statements
    // in its transaction, PostgreSQL the round's one call.
    let recorded = false;
    let failed = false;
    const failing: KyselyPlugin = {
      transformQuery: (args) => {
        const text = JSON.stringify(args.node);
        if (failed) return args.node;
        if (
          DIALECT === 'postgres'
            ? text.includes('parley_webhook_round') && text.includes('delivered')
            : recorded && text.includes('with busy as')
        ) {
          failed = true;
          throw new Error('claim failed (test)');
        }
        if (text.includes('delivery_attempts')) recorded = true;
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const { deps } = h.services;
    const w = new DeliveryWorker({ ...deps, db: { ...deps.db, kysely: deps.db.kysely.withPlugin(failing) } }, { id: 'claim-fails' });
    const delivered = async () =>
      (await db().selectFrom('deliveries').select('id').where('webhook_id', '=', hook.id).where('status', '=', 'delivered').execute())
        .length;
    w.start();
    try {
      await r.waitFor(3);
      r.release();
      // The round fails; its outcomes are then recorded one by one.
      await vi.waitFor(async () => expect(await delivered()).toBe(3));
      expect(failed).toBe(true);
    } finally {
      await w.stop();
    }
    const rows = await db()
      .selectFrom('deliveries')
      .leftJoin('delivery_attempts', 'delivery_attempts.delivery_id', 'deliveries.id')
      .select(['deliveries.id', 'deliveries.status', 'deliveries.attempts', 'delivery_attempts.id as attempt'])
      .where('deliveries.webhook_id', '=', hook.id)
      .execute();
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(row).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  if (DIALECT === 'postgres') {
    it('a started worker claims and records on its own connection: it delivers while the pool is exhausted', async () => {
      const { owner, integration } = await account();
      const r = await receiver();
      const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['message.incoming']);
      for (const who of ['nia', 'oli', 'pat']) await h.services.ingest.ingest(integration, message(who));
      // The worker's pool has one connection, held by a "request" for the whole test.
      const url = h.database.url as string;
      const pool = await openDatabase({ databaseUrl: url, dataDir: '', poolSize: 1 });
      let release = () => {};
      let holding = () => {};
      const isHeld = new Promise<void>((resolve) => (holding = resolve));
      const hold = pool.kysely.connection().execute(async () => {
        holding();
        await new Promise<void>((resolve) => (release = resolve));
      });
      await isHeld;
      const w = new DeliveryWorker({ ...h.services.deps, db: pool }, { id: 'own-connection', pgListenUrl: url });
      try {
        w.start();
        await r.waitFor(3);
        const delivered = async () =>
          (await db().selectFrom('deliveries').select('id').where('webhook_id', '=', hook.id).where('status', '=', 'delivered').execute())
            .length;
        await vi.waitFor(async () => expect(await delivered()).toBe(3));
      } finally {
        release();
        await hold;
        await w.stop();
        await pool.close();
      }
    });
  }

  it('records nothing, and throws nothing, when the webhook was deleted while its delivery was out', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    const hook = await register(owner, `${r.url}/hook`, 'v1.3', ['customer.created']);
    await h.services.ingest.ingest(integration, message('ivan'));
    const w = worker();
    const [job] = await w.claim(10);
    expect((await h.request({ method: 'DELETE', url: `/v1.3/webhooks/${hook.id}`, token: owner.access })).statusCode).toBe(200);
    await expect(w.deliver(job)).resolves.toMatchObject({ error: null });
    expect(await db().selectFrom('delivery_attempts').selectAll().where('delivery_id', '=', job.id).execute()).toEqual([]);
    expect(await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).execute()).toEqual([]);
  });

  it(`two workers never deliver one attempt twice concurrently (${DIALECT})`, async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    await register(owner, `${r.url}/one`);
    await register(owner, `${r.url}/two`);
    for (let i = 0; i < 15; i++) await h.services.ingest.ingest(integration, message(`p${i % 5}`));
    const a = worker({}, 'A');
    const b = worker({}, 'B');
    const [na, nb] = await Promise.all([a.drain(), b.drain()]);
    const expected = (await eventIds(owner.accountId)).length * 2;
    expect(na + nb).toBe(expected);
    expect(r.received).toHaveLength(expected);
    const keys = r.received.map((x) => `${x.headers['webhook-id']}|${x.headers['webhook-signature']}`);
    expect(new Set(keys).size).toBe(expected);
    const attempts = await db()
      .selectFrom('delivery_attempts')
      .innerJoin('deliveries', 'deliveries.id', 'delivery_attempts.delivery_id')
      .innerJoin('webhooks', 'webhooks.id', 'deliveries.webhook_id')
      .select('delivery_attempts.delivery_id')
      .where('webhooks.account_id', '=', owner.accountId)
      .execute();
    expect(new Set(attempts.map((x) => x.delivery_id)).size).toBe(attempts.length);
  });

  it('refuses private targets at delivery (after DNS resolution) unless allowed; follows no redirects', async () => {
    const { owner, integration } = await account();
    const r = await receiver();
    const port = new URL(r.url).port;
    const byIp = await register(owner, `${r.url}/ip`, 'v1.3', ['customer.created']);
    const byName = await register(owner, `http://localhost:${port}/name`, 'v1.3', ['customer.created']);
    await h.services.ingest.ingest(integration, message('ivan'));
    await worker({ webhookAllowPrivate: false }).drain();
    expect(r.received).toHaveLength(0);
    const ip = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', byIp.id).executeTakeFirstOrThrow();
    expect(ip.last_error).toMatch(/refused address 127\.0\.0\.1/);
    const named = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', byName.id).executeTakeFirstOrThrow();
    expect(named.last_error).toMatch(/localhost resolves to a refused address/);
    expect(named.status).toBe('pending');

    r.respond = () => 302;
    h.clock.advance(10_000);
    await worker().drain();
    expect(r.received.map((x) => x.headers.host)).toHaveLength(2);
    expect(r.received.some((x) => x.body.includes('redirected'))).toBe(false);
    const after = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', byIp.id).executeTakeFirstOrThrow();
    expect(after).toMatchObject({ status: 'pending', last_status_code: 302 });
  });

  it('a slow endpoint does not delay another; a hanging one times out', async () => {
    const { owner, integration } = await account();
    const slow = await receiver();
    const fast = await receiver();
    slow.hold = true;
    await register(owner, `${slow.url}/slow`, 'v1.3', ['message.incoming']);
    await register(owner, `${fast.url}/fast`, 'v1.3', ['message.incoming']);
    for (let i = 0; i < 6; i++) await h.services.ingest.ingest(integration, message(`s${i}`));
    const w = worker({ webhookTimeoutMs: 60_000 });
    w.start();
    await fast.waitFor(6); // every fast delivery arrives while the slow endpoint holds its requests
    expect(slow.received.length).toBeGreaterThan(0);
    slow.release();
    await w.stop();

    // Two webhooks on one host: each has its own connection pool, so the slow one's held requests
    // leave the fast one its slots.
    const shared = await receiver();
    shared.holdIf = (path) => path.startsWith('/slow');
    await register(owner, `${shared.url}/slow`, 'v1.3', ['customer.created']);
    const fastOnShared = await register(owner, `${shared.url}/fast`, 'v1.3', ['customer.created']);
    for (let i = 0; i < 4; i++) await h.services.ingest.ingest(integration, message(`host${i}`));
    const pooled = worker({ webhookTimeoutMs: 60_000, webhookEndpointConcurrency: 2 });
    pooled.start();
    await expect
      .poll(
        async () =>
          (
            await db()
              .selectFrom('deliveries')
              .select('id')
              .where('webhook_id', '=', fastOnShared.id)
              .where('status', '=', 'delivered')
              .execute()
          ).length,
        { timeout: 10_000 },
      )
      .toBe(4);
    shared.release();
    await pooled.stop();

    const hang = await receiver();
    hang.hold = true;
    const hook = await register(owner, `${hang.url}/hang`, 'v1.3', ['customer.created']);
    await h.services.ingest.ingest(integration, message('zed'));
    await worker().drain();
    const row = await db().selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row.last_error).toBe('timeout after 2000 ms');
  });
});
