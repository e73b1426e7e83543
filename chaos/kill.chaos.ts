import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../test/helpers/database.js';
import { ChaosReceiver, ServerProcess } from './server-process.js';
import { figure, FULL } from './support.js';

/**
 * The real server under a steady stream of widget visitor messages, killed with SIGKILL (once in
 * short mode, three times in full mode) and restarted on the same database. Then the webhook
 * receiver goes down, answers 500, and comes back. Every acknowledged message must be stored
 * exactly once, and its `message.incoming` delivery must arrive (at least once, signed, in order
 * per lead).
 */
const VISITORS = 6;
const KILLS = FULL ? 3 : 1;
const ACKS_PER_PHASE = FULL ? 60 : 25;
const WAIT_MS = 60_000;

let dataDir: string;
let database: TestDatabase;
let server: ServerProcess;
const receiver = new ChaosReceiver();

beforeAll(async () => {
  const root = path.resolve(import.meta.dirname, '..');
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-chaos-'));
  database = await createTestDatabase({ dataDir });
  await receiver.up();
  server = new ServerProcess({
    PARLEY_DATA_DIR: dataDir,
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    PARLEY_SIGNUP: 'open',
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    // 5 s, 5 min, 30 min, 2 h, ... become 1 ms, 60 ms, 0.36 s, 1.4 s, ...
    PARLEY_WEBHOOK_RETRY_SCALE: '0.0002',
    PARLEY_WEBHOOK_TIMEOUT_MS: '2000',
    PARLEY_EVENTS_POLL_MS: '100',
    PARLEY_WIDGET_SESSIONS_PER_IP: '100000',
    PARLEY_WIDGET_MESSAGES_PER_MINUTE: '100000',
    PARLEY_API_RATE_LIMIT: '0',
  });
  await server.start();
}, 180_000);

afterAll(async () => {
  await server?.kill();
  await receiver.down();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: string, url: string, body?: unknown, token?: string): Promise<{ status: number; json: any }> {
  const res = await fetch(server.base + url, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : undefined };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, ms = WAIT_MS): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await pause(50);
  }
  console.warn(`chaos: gave up waiting for ${what}`);
  return false;
}

/** Sends one message until the server acknowledges it (the same clientId across kills: stored once). */
async function sendUntilAcked(token: string, clientId: string, text: string, refused: string[]): Promise<void> {
  for (;;) {
    try {
      const res = await call('POST', '/widget/v1/messages', { clientId, text }, token);
      if (res.status === 200) return;
      if (res.status < 500 && res.status !== 429) {
        refused.push(`${clientId}: ${res.status} ${JSON.stringify(res.json)}`);
        return;
      }
    } catch {
      // killed mid-request, or not serving yet: the same message again
    }
    await pause(20);
  }
}

it('keeps every acknowledged message exactly once and delivers each, across SIGKILLs and a failing receiver', async () => {
  const owner = await call('POST', '/v1.3/auth/register', { login: 'chaos@example.com', pass: 'chaos password 1', name: 'Chaos' });
  const token = owner.json.accessToken.token as string;
  const widget = await call('POST', '/v1.3/integrations', { type: 'widget' }, token);
  const hook = await call('POST', '/v1.3/webhooks', { url: receiver.url, events: ['message.incoming'] }, token);
  expect(hook.status).toBe(200);
  receiver.secret = hook.json.secret;
  const visitors: string[] = [];
  for (let i = 0; i < VISITORS; i++) visitors.push((await call('POST', '/widget/v1/sessions', { key: widget.json.widget.key })).json.token);

  const acked: string[] = [];
  const refused: string[] = [];
  let stop = false;
  const streams = visitors.map(async (visitor, v) => {
    for (let n = 0; !stop; n++) {
      const text = `chaos v${v} m${n}`;
      await sendUntilAcked(visitor, `v${v}-m${n}`, text, refused);
      acked.push(text);
    }
  });
  for (let k = 1; k <= KILLS; k++) {
    await until(`${k * ACKS_PER_PHASE} acknowledgements`, () => acked.length >= k * ACKS_PER_PHASE);
    await server.kill();
    await server.start();
  }
  await until('acknowledgements after the last restart', () => acked.length >= (KILLS + 1) * ACKS_PER_PHASE);
  stop = true;
  await Promise.all(streams);

  // Deliveries leased by a killed process wait for their lease to end (timeout + 30 s), and a lead's
  // later deliveries wait behind them: let that settle before the receiver's own outage.
  const arrived = () => new Set(receiver.arrivals.map((a) => a.text));
  await until('the deliveries of the kill phase', () => acked.every((t) => arrived().has(t)));

  // The receiver goes down, then fails with 500, then comes back: nothing may be lost or reordered.
  await receiver.down();
  const during: string[] = [];
  for (let n = 0; n < 8; n++) {
    const text = `chaos outage m${n}`;
    await sendUntilAcked(visitors[n % VISITORS], `outage-${n}`, text, refused);
    during.push(text);
  }
  await pause(500);
  receiver.mode = 'fail';
  await receiver.up();
  await until('the receiver to have refused a few deliveries', () => receiver.failures >= 3, 10_000);
  receiver.mode = 'up';
  acked.push(...during);
  await until('every acknowledged message to be delivered', () => acked.every((t) => arrived().has(t)));

  const rows = (
    await sql<{ text: string; n: number }>`select text, count(*) as n from messages where text like 'chaos %' group by text`.execute(
      database.db.kysely,
    )
  ).rows;
  const stored = new Map(rows.map((r) => [r.text, Number(r.n)]));
  const lost = acked.filter((t) => !stored.has(t));
  const duplicated = [...stored].filter(([, n]) => n > 1).map(([t]) => t);
  const seen = arrived();
  const undelivered = acked.filter((t) => !seen.has(t));
  // Per lead, the first arrival of each event must come in event order (webhook-id = msg_<eventId>).
  const firstArrivals = new Map<number, number[]>();
  const counted = new Set<string>();
  for (const a of receiver.arrivals) {
    if (counted.has(a.webhookId)) continue;
    counted.add(a.webhookId);
    firstArrivals.set(a.leadId, [...(firstArrivals.get(a.leadId) ?? []), Number(a.webhookId.replace('msg_', ''))]);
  }
  const outOfOrder = [...firstArrivals.values()].reduce((sum, ids) => sum + ids.filter((id, i) => i > 0 && id < ids[i - 1]).length, 0);

  if (process.env.CHAOS_DEBUG) {
    const log = await sql`select delivery_id, status_code, error, at from delivery_attempts order by id`.execute(database.db.kysely);
    console.log(JSON.stringify(log.rows.slice(-40)));
  }
  figure('kill', 'SIGKILLs', KILLS);
  figure('kill', 'messages acknowledged', acked.length);
  figure('kill', 'messages lost', lost.length);
  figure('kill', 'messages duplicated', duplicated.length);
  figure('kill', 'deliveries received', receiver.arrivals.length);
  figure('kill', 'deliveries lost', undelivered.length);
  figure('kill', 'deliveries out of order', outOfOrder);
  figure('kill', 'invalid signatures', receiver.invalidSignatures);
  figure('kill', 'receiver 500s answered', receiver.failures);
  expect(refused).toEqual([]);
  expect(lost).toEqual([]);
  expect(duplicated).toEqual([]);
  expect(undelivered).toEqual([]);
  expect(outOfOrder).toBe(0);
  expect(receiver.invalidSignatures).toBe(0);
  expect(receiver.failures).toBeGreaterThanOrEqual(3);
});
