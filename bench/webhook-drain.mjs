// Webhook delivery capacity without ingest: a backlog of N events x 5 endpoints written
// straight into a fresh SQLite database (or, with --database-url, a fresh schema of that PostgreSQL
// database, dropped afterwards), then one DeliveryWorker of this tree's dist/ started in
// this process sends it to bench/lib/receiver.mjs (its own process), as the server's worker would.
// Prints deliveries/s and the CPU time per delivery of this process, of the receiver and, on
// PostgreSQL, of the database's backends (every connection to the database given but the one that
// reads them: give it a database of its own): on a machine shared with other work the CPU figures
// move far less than the rate.
//
//   node bench/webhook-drain.mjs [--events N] [--runs N] [--per-endpoint N] [--per-process N]
//                                [--database-url postgres://…] [--cpu-prof file.cpuprofile]
//                                [--sql-profile file.json]
//
// --per-endpoint / --per-process: the worker's concurrency (default 16 / 128, the server's defaults).
// --cpu-prof: a V8 profile of this process during the drain only (not the backlog's writing), for
// bench/profile-summary.mjs; with --runs above 1, of the last run.
// --sql-profile (SQLite): time and calls per statement (PARLEY_SQL_PROFILE's format), written when
// the run's database closes; with --runs above 1, of the last run.
//
// Build first (npx tsc -p tsconfig.build.json). To compare with another build, run this script
// from a copy of that tree (it imports its own dist/).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { root } from '../scripts/ensure-built.mjs';
import { processUs } from './lib/cpu.mjs';
import { startHelper } from './lib/processes.mjs';

const { values: opts } = parseArgs({
  options: {
    events: { type: 'string', default: '4000' },
    runs: { type: 'string', default: '1' },
    'per-endpoint': { type: 'string', default: '16' },
    'per-process': { type: 'string', default: '128' },
    'database-url': { type: 'string' },
    'cpu-prof': { type: 'string' },
    'sql-profile': { type: 'string' },
  },
});
const EVENTS = Number(opts.events);
const ENDPOINTS = 5;
const LEADS = 200; // events of 200 leads in turn, as the bench's 200 widget visitors make them
const dist = (p) => import(pathToFileURL(path.join(root, 'dist', p)).href);
const { openDatabase } = await dist('db/database.js');
const { migrateToLatest } = await dist('db/migrate.js');
const { DeliveryWorker } = await dist('webhooks/delivery-worker.js');

/** CPU time (user + system) of another process, in µs (Linux /proc). */
function cpuOf(pid) {
  const us = processUs(pid);
  if (us === undefined) throw new Error(`process ${pid} is gone`);
  return us;
}

/** One statement on the PostgreSQL database given (schema creation and removal); its rows. */
async function adminQuery(text) {
  const { createRequire } = await import('node:module');
  const { default: pg } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('pg')).href);
  const client = new pg.Client({ connectionString: opts['database-url'] });
  await client.connect();
  try {
    return (await client.query(text)).rows;
  } finally {
    await client.end();
  }
}

/** The inspector's CPU profiler in this process; `stop()` returns the profile. */
/** PostgreSQL: CPU time in µs of each backend connected to the database given, by pid. */
async function backendsUs() {
  const rows = await adminQuery('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
  return new Map(rows.map((r) => [r.pid, processUs(r.pid) ?? 0]));
}

async function startProfiler() {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      return profile;
    },
  };
}

async function run() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-drain-'));
  const receiver = await startHelper(path.join(root, 'bench', 'lib', 'receiver.mjs'), [String(ENDPOINTS)], { ports: ENDPOINTS });
  let databaseUrl;
  const schema = `drain_${process.pid}_${Date.now().toString(36)}`;
  if (opts['database-url']) {
    await adminQuery(`create schema ${schema}`);
    const u = new URL(opts['database-url']);
    u.searchParams.set('options', `-c search_path=${schema}`);
    databaseUrl = u.toString();
  }
  const db = await openDatabase({ dataDir: dir, databaseUrl, sqlProfile: opts['sql-profile'] });
  try {
    await migrateToLatest(db);
    const k = db.kysely;
    const now = Date.now();
    const { id: accountId } = await k
      .insertInto('accounts')
      .values({ name: 'drain', plan: '{}', created_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    const hooks = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const secret = `whsec_${Buffer.alloc(24, i + 1).toString('base64')}`;
      const row = {
        account_id: accountId,
        url: `${receiver.endpoints[i]}/hook/${i}`,
        name: `drain ${i}`,
        status: 1,
        events: null,
        secret,
        api_version: 'v1.3',
        created_at: now,
      };
      hooks.push((await k.insertInto('webhooks').values(row).returning('id').executeTakeFirstOrThrow()).id);
    }
    const message = { id: 1, incoming: true, text: 'Hello, is the blue hoodie in stock in size M? (1234)', datetime: now, attachments: [] };
    await k.transaction().execute(async (trx) => {
      for (let i = 0; i < EVENTS; i++) {
        const leadId = 1 + (i % LEADS);
        const payload = JSON.stringify({ type: 'message.incoming', accountId, leadId, isNewLead: false, message });
        const { id } = await trx
          .insertInto('events')
          .values({ account_id: accountId, type: 'message.incoming', lead_id: leadId, payload, created_at: now })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('deliveries')
          .values(
            hooks.map((h) => ({
              webhook_id: h,
              event_id: id,
              message_id: `msg_${id}`,
              lead_id: leadId,
              next_attempt_at: now,
              created_at: now,
            })),
          )
          .execute();
      }
    });
    const total = EVENTS * ENDPOINTS;
    const config = {
      webhookTimeoutMs: 15_000,
      webhookAllowPrivate: true,
      webhookEndpointConcurrency: Number(opts['per-endpoint']),
      webhookConcurrency: Number(opts['per-process']),
      webhookRetryScale: 1,
      eventsPollMs: 1000,
      databaseUrl,
    };
    const log = { info() {}, warn() {}, debug() {}, error: (...args) => console.error(...args) };
    const worker = new DeliveryWorker({ db, clock: { now: () => Date.now() }, config, log }, { id: 'drain' });
    const profiler = opts['cpu-prof'] ? await startProfiler() : undefined;
    const cpu0 = process.cpuUsage();
    const receiverCpu0 = cpuOf(receiver.pid);
    const backends0 = databaseUrl ? await backendsUs() : undefined;
    const t0 = performance.now();
    worker.start();
    const stats = async () => JSON.parse(await (await fetch(`${receiver.url}/__stats`)).text()).count;
    while ((await stats()) < total) await new Promise((r) => setTimeout(r, 20));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const receiverCpu = cpuOf(receiver.pid) - receiverCpu0;
    // Backends opened during the drain (the worker's own connections) count from 0.
    let backendUs = 0;
    if (backends0) for (const [pid, us] of await backendsUs()) backendUs += us - (backends0.get(pid) ?? 0);
    if (profiler) fs.writeFileSync(opts['cpu-prof'], JSON.stringify(await profiler.stop()));
    await worker.stop();
    const pending = await k
      .selectFrom('deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('status', '!=', 'delivered')
      .executeTakeFirstOrThrow();
    console.log(
      `${total} deliveries in ${(ms / 1000).toFixed(2)} s = ${((total / ms) * 1000).toFixed(0)}/s; CPU per delivery: worker ` +
        `${((cpu.user + cpu.system) / total).toFixed(0)} µs, receiver ${(receiverCpu / total).toFixed(0)} µs` +
        `${backends0 ? `, PostgreSQL ${(backendUs / total).toFixed(0)} µs` : ''}; ` +
        `not delivered ${pending.n}; load average ${os.loadavg()[0].toFixed(1)}`,
    );
  } finally {
    await receiver.stop();
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
    if (databaseUrl) await adminQuery(`drop schema ${schema} cascade`);
  }
}

for (let i = 0; i < Number(opts.runs); i++) await run();
