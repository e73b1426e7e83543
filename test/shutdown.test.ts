import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import WebSocket from 'ws';
import type { AddressInfo } from 'node:net';
import { createHarness, type Harness } from './helpers/harness.js';
import { webhookFixture } from './helpers/webhook-fixture.js';
import { shutDown } from '../src/shutdown.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';

/**
 * SIGTERM's sequence (src/shutdown.ts) on a listening app: a webhook send that never answers is
 * abandoned and given back, realtime sockets close with 1001, a keep-alive client mid-shutdown
 * gets an answer with `Connection: close` rather than a reset, all well within the deadline.
 */
let h: Harness;
const fx = webhookFixture(() => h);
let port: number;
beforeAll(async () => {
  h = await createHarness({ env: { PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' } });
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  port = (h.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await fx.stopAll();
  await h.database.drop();
});

const silent = { info() {}, warn() {}, error() {}, debug() {} };

function get(agent: http.Agent, path: string): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
    });
    req.on('error', reject);
  });
}

const message = (id: string): IncomingMessage => ({
  externalId: id,
  datetime: h.clock.now(),
  sender: { socialId: 'sd', name: 'Shutdown' },
  channel: { externalId: 'chat-sd', type: 'message' },
  text: 'hello',
});

describe('shutdown', () => {
  it('abandons webhook sends, closes sockets with 1001, answers keep-alive clients, within the deadline', async () => {
    const { owner, integration } = await fx.account();
    const never = await fx.receiver();
    never.hold = true;
    const hook = (
      await h.request({
        method: 'POST',
        url: '/v1.3/webhooks',
        token: owner.access,
        payload: { url: `${never.url}/hook`, events: ['message.incoming'] },
      })
    ).json();
    await h.services.ingest.ingest(integration, message('sd-1'));
    // A send that would hold the shutdown for the whole webhook timeout.
    const worker = fx.worker({ webhookTimeoutMs: 60_000 });
    worker.start();
    await never.waitFor(1);

    const ws = new WebSocket(`ws://127.0.0.1:${port}/v1.3/realtime?token=${owner.access}`);
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise<void>((resolve) => ws.on('message', (d) => (JSON.parse(d.toString()).type === 'ready' ? resolve() : undefined)));

    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    expect((await get(agent, '/health')).status).toBe(200);

    const started = Date.now();
    const done = shutDown({ app: h.app, workers: [worker], closeDatabase: async () => {}, log: silent, timeoutMs: 8000 });
    // The kept-alive connection is reused mid-shutdown: an answer, and the server closes it after.
    const during = await get(agent, '/health');
    expect(during.status).toBe(200);
    expect(during.connection).toBe('close');

    expect(await done).toBe('clean');
    expect(Date.now() - started).toBeLessThan(4000);
    expect(await closed).toBe(1001);
    agent.destroy();

    // The abandoned delivery was given back unattempted: the next worker sends it at once.
    const row = await h.database.db.kysely.selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'pending', attempts: 0, lease_until: null });
    never.hold = false;
    expect(await fx.worker().drain()).toBe(1);
    expect(never.received.length).toBe(2);
    expect(never.received[0].headers['webhook-id']).toBe(never.received[1].headers['webhook-id']);
  });

  it('gives up at the deadline when a step hangs', async () => {
    const hanging = { name: 'stuck', healthy: () => true, stop: () => new Promise<void>(() => {}) };
    const other = await createHarness();
    const started = Date.now();
    expect(await shutDown({ app: other.app, workers: [hanging], closeDatabase: async () => {}, log: silent, timeoutMs: 200 })).toBe(
      'deadline',
    );
    expect(Date.now() - started).toBeLessThan(2000);
    await other.database.drop();
  });
});
