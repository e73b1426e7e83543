// bench/ingest (also the suite's `ingest` scenario: npm run bench -- ingest): normalized incoming messages pushed through the ingest pipeline (no HTTP), each
// message committed in its own transaction, as a channel would. Prints messages/s and latency
// percentiles per message. Not a test: figures are printed, never judged.
//
//   node bench/ingest.mjs [--messages 100000] [--customers 10000] [--concurrency 8] [--smoke]
//   DATABASE_URL=postgres://... node bench/ingest.mjs     (PostgreSQL; uses a fresh schema)
//   DATABASE_URL=postgres://... node bench/ingest.mjs --processes 2
//       (PostgreSQL: that many pipeline processes on one fresh schema, each with its own account and
//       integration, sharing the messages and the concurrency, started together; the rate is all
//       the messages over the span from the first start to the last end, the percentiles the
//       highest of the processes'. Their ingest batches take turns on the lanes, as several Parley
//       processes' do: docs/performance.md.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { execFile } from 'node:child_process';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '100000' },
    customers: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '8' },
    smoke: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    processes: { type: 'string', default: '1' },
    // Internal, for --processes: a child pipeline runs in this schema, from this instant (epoch ms).
    'in-schema': { type: 'string' },
    'start-at': { type: 'string' },
  },
});
const total = values.smoke ? 2000 : Number(values.messages);
const customers = values.smoke ? 200 : Number(values.customers);
const concurrency = Number(values.concurrency);

if (!values['no-build']) ensureBuilt();
const load = (p) => import(pathToFileURL(path.join(root, 'dist', p)).href);
const { loadConfig } = await load('config.js');
const { openDatabase } = await load('db/database.js');
const { migrateToLatest } = await load('db/migrate.js');
const { createServices } = await load('services.js');

const processes = Math.max(1, Number(values.processes) || 1);
const child = values['in-schema'];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-ingest-'));
let databaseUrl = process.env.DATABASE_URL;
let dropSchema = async () => {};
if (processes > 1 && !databaseUrl?.startsWith('postgres')) {
  console.error('bench/ingest: --processes above 1 needs DATABASE_URL=postgres://... (SQLite is one process)');
  process.exit(2);
}
const inSchema = (schema) => {
  const u = new URL(databaseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
};
if (child) {
  databaseUrl = inSchema(child);
} else if (databaseUrl?.startsWith('postgres')) {
  const schema = `bench_${process.pid}`;
  const admin = await openDatabase({ databaseUrl, dataDir });
  const { sql } = await import('kysely');
  await sql.raw(`create schema ${schema}`).execute(admin.kysely);
  databaseUrl = inSchema(schema);
  dropSchema = async () => {
    await sql.raw(`drop schema ${schema} cascade`).execute(admin.kysely);
    await admin.close();
  };
  if (processes > 1) {
    const setup = await openDatabase({ databaseUrl, dataDir });
    await migrateToLatest(setup);
    await setup.close();
    const startAt = Date.now() + 3000;
    const runs = await Promise.all(
      Array.from({ length: processes }, (_, i) => {
        const share = Math.floor(total / processes) + (i < total % processes ? 1 : 0);
        const args = [process.argv[1], '--json', '--no-build', '--in-schema', schema, '--start-at', String(startAt)];
        args.push('--messages', String(share), '--customers', String(customers));
        args.push('--concurrency', String(Math.max(1, Math.round(concurrency / processes))));
        return new Promise((resolve, reject) =>
          execFile(process.execPath, args, { env: process.env, maxBuffer: 1 << 20 }, (err, stdout) =>
            err ? reject(err) : resolve(JSON.parse(stdout.trim().split('\n').at(-1))),
          ),
        );
      }),
    );
    const span = (Math.max(...runs.map((r) => r.endedAt)) - Math.min(...runs.map((r) => r.startedAt))) / 1000;
    const messages = runs.reduce((n, r) => n + r.messages, 0);
    report({
      scenario: 'ingest',
      dialect: 'postgres',
      processes,
      messages,
      customers,
      concurrency,
      messagesPerSecond: Math.round(messages / span),
      perProcess: runs.map((r) => r.messagesPerSecond),
      p50ms: Math.max(...runs.map((r) => r.p50ms)),
      p99ms: Math.max(...runs.map((r) => r.p99ms)),
    });
    await dropSchema();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  }
}
const config = loadConfig({
  PARLEY_DATA_DIR: dataDir,
  PARLEY_JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
  DATABASE_URL: databaseUrl,
  // PostgreSQL ingest batching (docs/operations.md): the environment's setting, for comparisons.
  PARLEY_PG_INGEST_LANES: process.env.PARLEY_PG_INGEST_LANES,
});
const db = await openDatabase({ databaseUrl, dataDir });
if (!child) await migrateToLatest(db);
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const services = createServices({ db, config, clock: { now: () => Date.now() }, log: quiet });
const login = child ? `bench-${process.pid}` : 'bench';
const owner = await services.accounts.createWithOwner({ login: `${login}@example.com`, pass: 'bench password', name: 'Bench' });
const integration = await db.kysely
  .insertInto('integrations')
  .values({ account_id: owner.account_id, type: 'widget', login, created_at: Date.now() })
  .returningAll()
  .executeTakeFirstOrThrow();
if (values['start-at']) await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(values['start-at']) - Date.now())));

const latencies = new Float64Array(total);
let next = 0;
const startedAt = Date.now();
const started = performance.now();
async function lane() {
  for (;;) {
    const i = next++;
    if (i >= total) return;
    const c = i % customers;
    const t0 = performance.now();
    await services.ingest.ingest(integration, {
      externalId: `m${i}`,
      datetime: Date.now(),
      sender: { socialId: `c${c}`, name: `Customer ${c}` },
      channel: { externalId: `chat-${c}`, type: 'message' },
      text: `message ${i} from customer ${c}: where is my order?`,
      attachments: i % 10 === 0 ? [{ type: 'photo', url: `https://example.com/p/${i}.jpg` }] : [],
    });
    latencies[i] = performance.now() - t0;
  }
}
await Promise.all(Array.from({ length: concurrency }, lane));
const seconds = (performance.now() - started) / 1000;
latencies.sort();
const pct = (p) => latencies[Math.min(total - 1, Math.floor((p / 100) * total))].toFixed(3);
const result = {
  scenario: 'ingest',
  dialect: db.dialect,
  messages: total,
  customers,
  concurrency,
  messagesPerSecond: Math.round(total / seconds),
  p50ms: Number(pct(50)),
  p99ms: Number(pct(99)),
  ...(child ? { startedAt, endedAt: Date.now() } : {}),
};
report(result);
await db.close();
await dropSchema();
fs.rmSync(dataDir, { recursive: true, force: true });

function report(result) {
  const full = { ...result, target: '>= 10,000 messages/s on the embedded default' };
  if (values.json) {
    // The suite (bench/run.mjs, scenario `ingest`) reads this line; so does a --processes parent.
    console.log(JSON.stringify(full));
  } else {
    console.table([full]);
    fs.mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
    const name = `ingest-${full.dialect}${full.processes > 1 ? `-x${full.processes}` : ''}.json`;
    fs.writeFileSync(path.join(root, 'bench', 'results', name), JSON.stringify(full, null, 2));
  }
}
