// bench/ingest (also the suite's `ingest` scenario: npm run bench -- ingest): normalized incoming messages pushed through the ingest pipeline (no HTTP), each
// message committed in its own transaction, as a channel would. Prints messages/s and latency
// percentiles per message. Not a test: figures are printed, never judged.
//
//   node bench/ingest.mjs [--messages 100000] [--customers 10000] [--concurrency 8] [--smoke]
//   DATABASE_URL=postgres://... node bench/ingest.mjs     (PostgreSQL; uses a fresh schema)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '100000' },
    customers: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '8' },
    smoke: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
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

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-ingest-'));
let databaseUrl = process.env.DATABASE_URL;
let dropSchema = async () => {};
if (databaseUrl?.startsWith('postgres')) {
  const schema = `bench_${process.pid}`;
  const admin = await openDatabase({ databaseUrl, dataDir });
  const { sql } = await import('kysely');
  await sql.raw(`create schema ${schema}`).execute(admin.kysely);
  const u = new URL(databaseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  databaseUrl = u.toString();
  dropSchema = async () => {
    await sql.raw(`drop schema ${schema} cascade`).execute(admin.kysely);
    await admin.close();
  };
}
const config = loadConfig({
  PARLEY_DATA_DIR: dataDir,
  PARLEY_JWT_SECRET: 'bench-secret-bench-secret-bench-secret',
  DATABASE_URL: databaseUrl,
  // PostgreSQL ingest batching (docs/operations.md): the environment's setting, for comparisons.
  PARLEY_PG_INGEST_LANES: process.env.PARLEY_PG_INGEST_LANES,
});
const db = await openDatabase({ databaseUrl, dataDir });
await migrateToLatest(db);
const quiet = { info() {}, warn() {}, error() {}, debug() {} };
const services = createServices({ db, config, clock: { now: () => Date.now() }, log: quiet });
const owner = await services.accounts.createWithOwner({ login: 'bench@example.com', pass: 'bench password', name: 'Bench' });
const integration = await db.kysely
  .insertInto('integrations')
  .values({ account_id: owner.account_id, type: 'widget', login: 'bench', created_at: Date.now() })
  .returningAll()
  .executeTakeFirstOrThrow();

const latencies = new Float64Array(total);
let next = 0;
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
  target: '>= 10,000 messages/s on the embedded default',
};
if (values.json) {
  // The suite (bench/run.mjs, scenario `ingest`) reads this line.
  console.log(JSON.stringify(result));
} else {
  console.table([result]);
  fs.mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
  fs.writeFileSync(path.join(root, 'bench', 'results', `ingest-${db.dialect}.json`), JSON.stringify(result, null, 2));
}
await db.close();
await dropSchema();
fs.rmSync(dataDir, { recursive: true, force: true });
