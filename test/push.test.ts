import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IntegrationRow } from '../src/db/schema.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';
import { createPushWorker } from '../src/push/start.js';
import { WAKE_GAP_MS, type PushWorker } from '../src/push/push-worker.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { createIntegration, createManager, type ManagerFixture } from './helpers/fixtures.js';
import { startFakeWebPush, type FakeWebPush } from './helpers/fake-web-push.js';
import { startFakeFcm, type FakeFcm } from './helpers/fake-fcm.js';
import { statementCounter } from './helpers/statements.js';

/**
 * Push notifications end to end: a message ingested and committed, the push worker reading the
 * outbox, and local push services over real HTTP — a Web Push service that checks VAPID and
 * decrypts the payload with the subscription's keys, and FCM HTTP v1 that checks the service
 * account's bearer and the message shape.
 */
let h: Harness;
let webPush: FakeWebPush;
let fcm: FakeFcm;
let worker: PushWorker;
let owner: SignedUp;
let manager: ManagerFixture;
let integration: IntegrationRow;
let seq = 0;

async function registerWeb(token: string) {
  const sub = webPush.subscribe();
  const res = await h.request({ method: 'POST', url: '/v1.3/devices', token, payload: { platform: 'web', subscription: sub.json } });
  expect(res.statusCode, res.body).toBe(200);
  return { ...sub, deviceId: res.json().id as number };
}

async function registerFcm(token: string, fcmToken: string) {
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/devices',
    token,
    payload: { platform: 'fcm', token: fcmToken, name: 'Phone' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().id as number;
}

/** A customer's message, committed; then the worker handles what the outbox holds. */
async function incoming(customer: string, text = `hello ${++seq}`): Promise<number> {
  const msg: IncomingMessage = {
    externalId: `push-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: customer, name: `Customer ${customer}`, login: customer },
    channel: { externalId: `chat-${customer}`, type: 'message' },
    text,
  };
  const { leadId } = await h.services.ingest.ingest(integration, msg);
  await worker.poll();
  return leadId;
}

/** An integration of a new account without devices. */
async function quietIntegration(): Promise<IntegrationRow> {
  const quiet = await h.signUp();
  return h.database.db.kysely
    .selectFrom('integrations')
    .selectAll()
    .where('id', '=', await createIntegration(h, quiet.accountId))
    .executeTakeFirstOrThrow();
}

/** A 'hello' from the customer `${name}-${i}` through `sa`, committed. */
const hello = (sa: IntegrationRow, name: string, i: number) =>
  h.services.ingest.ingest(sa, {
    externalId: `${name}-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: `${name}-${i}`, name: `${name} ${i}` },
    channel: { externalId: `${name}-chat-${i}`, type: 'message' },
    text: 'hello',
  });

/** A worker whose statements are counted, with the table each built query reads. */
function countedWorker() {
  const { counter, ...counts } = statementCounter();
  const kysely = h.services.deps.db.kysely.withPlugin(counter);
  return { counted: createPushWorker({ ...h.services, deps: { ...h.services.deps, db: { ...h.services.deps.db, kysely } } }), ...counts };
}

const webFor = (subscriptionId: string) => webPush.received.filter((r) => r.subscriptionId === subscriptionId);

beforeAll(async () => {
  webPush = await startFakeWebPush();
  fcm = await startFakeFcm();
  h = await createHarness({
    env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1', PARLEY_FCM_CREDENTIALS: fcm.credentials, PARLEY_FCM_API_URL: fcm.base },
  });
  fcm.now = () => h.clock.now();
  owner = await h.signUp();
  manager = await createManager(h, owner);
  const id = await createIntegration(h, owner.accountId);
  integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  worker = createPushWorker(h.services);
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await h.close();
  await webPush.close();
  await fcm.close();
});

beforeEach(() => {
  // Each test starts past every throttle window of the one before.
  h.clock.advance(120_000);
});

describe('push notifications', () => {
  it('an unassigned inbox lead reaches every away employee who sees it: Web Push (VAPID, encrypted) and FCM (bearer, shape)', async () => {
    const ownerWeb = await registerWeb(owner.access);
    const managerWeb = await registerWeb(manager.access);
    await registerFcm(manager.access, 'fcm-manager-1');
    const text = 'x'.repeat(90) + 'ÿ'.repeat(30);
    const leadId = await incoming('alice', text);

    expect(webPush.refused).toEqual([]);
    const [toOwner] = webFor(ownerWeb.id);
    expect(toOwner!.payload).toEqual({ title: 'Customer alice', body: [...text].slice(0, 100).join(''), leadId, url: `/leads/${leadId}` });
    const vapid = (await h.request({ method: 'GET', url: '/v1.3/devices/vapid-key', token: owner.access })).json().publicKey;
    expect(toOwner!.vapidKey).toBe(vapid);
    expect(toOwner!.ttl).toBeDefined();
    expect(webFor(managerWeb.id)).toHaveLength(1);

    expect(fcm.refused).toEqual([]);
    expect(fcm.messages).toEqual([
      expect.objectContaining({
        token: 'fcm-manager-1',
        notification: { title: 'Customer alice', body: [...text].slice(0, 100).join('') },
        data: { leadId: String(leadId), url: `/leads/${leadId}` },
      }),
    ]);
    expect(fcm.tokensIssued).toBe(1);
  });

  it('at most one push per employee and lead per minute, and only one across several workers', async () => {
    const device = await registerWeb(owner.access);
    const second = createPushWorker(h.services);
    await second.start();
    try {
      await incoming('bob');
      await second.poll();
      expect(webFor(device.id)).toHaveLength(1);
      await incoming('bob');
      expect(webFor(device.id)).toHaveLength(1);
      h.clock.advance(61_000);
      await incoming('bob');
      await second.poll();
      expect(webFor(device.id)).toHaveLength(2);
    } finally {
      await second.stop();
    }
  });

  it("an assigned lead goes only to the employee responsible; a lead out of an employee's reach never", async () => {
    const ownerDevice = await registerWeb(owner.access);
    const managerDevice = await registerWeb(manager.access);
    const otherIntegration = await createIntegration(h, owner.accountId, 'widget', 'other');
    const outsider = await createManager(h, owner, { sources: [otherIntegration] });
    const outsiderDevice = await registerWeb(outsider.access);

    const leadId = await incoming('carol');
    expect(webFor(outsiderDevice.id)).toHaveLength(0);
    await h.database.db.kysely
      .updateTable('leads')
      .set({ user_id: manager.userId, status_type: 'active' })
      .where('id', '=', leadId)
      .execute();
    h.clock.advance(61_000);
    const before = { owner: webFor(ownerDevice.id).length, manager: webFor(managerDevice.id).length };
    await incoming('carol');
    expect(webFor(ownerDevice.id)).toHaveLength(before.owner);
    expect(webFor(managerDevice.id)).toHaveLength(before.manager + 1);
  });

  it('not while the employee has a realtime connection open in any live process', async () => {
    const device = await registerWeb(manager.access);
    const leave = h.services.presence.enter(manager.userId);
    await h.services.presence.flush();
    await incoming('dave');
    expect(webFor(device.id)).toHaveLength(0);

    // A process that stopped confirming its connections (crashed) no longer counts.
    h.clock.advance(61_000);
    await incoming('dave');
    expect(webFor(device.id)).toHaveLength(1);

    h.clock.advance(61_000);
    await h.services.presence.beat();
    await incoming('dave');
    expect(webFor(device.id)).toHaveLength(1);
    leave();
    await h.services.presence.flush();
    h.clock.advance(61_000);
    await incoming('dave');
    expect(webFor(device.id)).toHaveLength(2);
  });

  it("without previews (the owner's switch) only the customer's name is shown", async () => {
    expect(
      (await h.request({ method: 'PUT', url: '/v1.3/devices/settings', token: manager.access, payload: { previews: false } })).statusCode,
    ).toBe(403);
    expect(
      (await h.request({ method: 'PUT', url: '/v1.3/devices/settings', token: owner.access, payload: { previews: false } })).json(),
    ).toEqual({ previews: false });
    const device = await registerWeb(owner.access);
    await incoming('erin', 'my card number is 4111 1111 1111 1111');
    expect(webFor(device.id).at(-1)!.payload).toMatchObject({ title: 'Customer erin', body: '' });
    await h.request({ method: 'PUT', url: '/v1.3/devices/settings', token: owner.access, payload: { previews: true } });
  });

  it("reads an account's devices once per batch of events, and nothing more for an account without any", async () => {
    // Every process runs this worker and reads every event: a look-up per event is paid once per
    // process (docs/performance.md).
    const sa = await quietIntegration();
    // Every statement run, and the table each built query reads (the events read is prepared,
    // compiled once, so only the count sees it).
    const { counted, statements, tables, reset } = countedWorker();
    // Its cursor at the newest event; stopped, nothing wakes it: the poll below reads all five.
    await counted.start();
    await counted.stop();
    for (let i = 0; i < 5; i++) {
      await hello(sa, 'quiet', i);
    }
    reset();
    await counted.poll();
    // Whether any device exists (another account's does), the events after the cursor, then the
    // account's devices once: none, so no lead is read.
    expect(statements()).toBe(3);
    expect(tables()).toEqual(['devices']);
  });

  it('wake-ups within WAKE_GAP_MS of a read share the next one: a burst of commits is not a read each', async () => {
    // Every process's worker is woken by every commit of every process (docs/performance.md). An
    // account without devices while another account has some: a read is at most three statements
    // (whether any device exists, the events after the cursor, the account's devices once; the test
    // above counts them).
    const sa = await quietIntegration();
    const { counted, statements, reset } = countedWorker();
    await counted.start();
    try {
      reset();
      const began = performance.now();
      for (let i = 0; i < 20; i++) {
        await hello(sa, 'burst', i);
      }
      const elapsed = performance.now() - began;
      // The first wake reads at once, then at most one read per gap.
      const reads = 1 + Math.ceil(elapsed / WAKE_GAP_MS);
      expect(statements()).toBeLessThanOrEqual(3 * reads);
    } finally {
      await counted.stop();
    }
  });

  it('removes subscriptions the push service calls gone (410, FCM UNREGISTERED)', async () => {
    const web = await registerWeb(owner.access);
    const phone = await registerFcm(owner.access, 'fcm-owner-gone');
    webPush.expire(web.id);
    fcm.unregister('fcm-owner-gone');
    await incoming('frank');
    const left = (await h.request({ method: 'GET', url: '/v1.3/devices', token: owner.access })).json().map((d: { id: number }) => d.id);
    expect(left).not.toContain(web.deviceId);
    expect(left).not.toContain(phone);
  });
});
