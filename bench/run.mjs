// Parley's benchmark suite: one account of realistic size, the real server process, and
// every figure next to the machine's own ceiling: a bare fastify route answering a body of the same
// size to the same requests, measured in the same run, just before the scenario.
//
//   npm run bench                         all scenarios, embedded SQLite, 100k leads / 1M messages
//   npm run bench -- leads history        only those scenarios (names below)
//   npm run bench -- --db postgres        the same on PostgreSQL (BENCH_DATABASE_URL, default
//                                         postgres://postgres@127.0.0.1:5432/test; a fresh schema per run)
//   npm run bench -- --db postgres --processes 2   two server processes on the database, HTTP
//                                         load spread over both (connections shared out)
//   npm run bench -- --db postgres --processes 2 --pool 5   the same with PARLEY_PG_POOL_SIZE=5 in
//                                         each process (connections in total as one process's 10)
//   npm run bench -- --smoke              tiny data, ~2 s per scenario: what CI runs (figures not judged)
// Options: --runs N (median of N runs per scenario; default 1), --duration S, --connections C,
//   --seed N, --scale F (data size factor), --keep (keep the run's data copy / schema), --no-build,
//   --cpu-prof (server under node --cpu-prof; profiles in bench/results/profiles/),
//   --sql-profile (SQLite: time per statement, PARLEY_SQL_PROFILE -> bench/results/profiles/sql-*.json),
//   --node-flags "<flags>" (Node.js flags of the server; default: those of `npm start`),
//   --fixed-rate R (with --processes: the rate of the 1 vs N comparison, req/s, instead of a share
//   of one process's; the same R makes two builds' transactions per request comparable).
// Each HTTP scenario also prints, on Linux, the CPU of a request: the servers', PostgreSQL's (every
// postgres process) and the load generator's, and the machine's idle share (bench/lib/cpu.mjs).
// The generated data set is cached in bench/.data/ by dialect-independent seed and size (SQLite: the
// folder is copied per run, so writes of one run never reach the next). Results: bench/results/*.json.
// Exit code: 0 when every scenario ran without errors; 1 when one failed or had errors. Targets are
// printed, never judged by the exit code.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { generate, GENERATOR_VERSION, sizesFor } from './generate.mjs';
import { cpuWatch, describeCpu } from './lib/cpu.mjs';
import { runLoad, runPaced, percentile } from './lib/load.mjs';
import { openProbe } from './lib/probe.mjs';
import { rssMb, startFlags, startHelper, startServer } from './lib/processes.mjs';
import { progressReporter } from './lib/progress.mjs';
import { CUSTOMER_QUERIES, MESSAGE_QUERIES } from './lib/vocabulary.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: 'string', default: 'sqlite' },
    processes: { type: 'string', default: '1' },
    pool: { type: 'string' },
    'fixed-rate': { type: 'string' },
    smoke: { type: 'boolean', default: false },
    runs: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string', default: '50' },
    seed: { type: 'string', default: '1' },
    scale: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    'sql-profile': { type: 'boolean', default: false },
    'node-flags': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

/** The scenarios, in the order they run. `http`: a load run against the ceiling. */
const SCENARIOS = [
  { name: 'startup', kind: 'startup', target: '< 800 ms (data set), < 500 ms (empty)' },
  { name: 'leads', kind: 'http', target: 'ratio >= 0.6, p99 < 25 ms', check: (r) => r.ratio >= 0.6 && r.p99 < 25 },
  { name: 'leads-filtered', kind: 'http', target: 'ratio >= 0.6, p99 < 25 ms', check: (r) => r.ratio >= 0.6 && r.p99 < 25 },
  { name: 'lead', kind: 'http' },
  { name: 'history', kind: 'http', target: 'ratio >= 0.7', check: (r) => r.ratio >= 0.7 },
  // Latency targets (p95 < 20 ms at 1M messages): measured with a few searchers at once,
  // not 50 (queueing would be the figure).
  { name: 'customer-search', kind: 'http', connections: 4, target: 'p95 < 20 ms (4 connections)', check: (r) => r.p95 < 20 },
  { name: 'message-search', kind: 'http', connections: 4, target: 'p95 < 20 ms (4 connections)', check: (r) => r.p95 < 20 },
  { name: 'send', kind: 'http', write: true },
  { name: 'widget-visitor', kind: 'http', write: true, target: '>= 5000 messages/s', check: (r) => r.rps >= 5000 },
  // Meta's signed webhook posts, one WhatsApp text each, answered once committed; after widget-visitor.
  {
    name: 'whatsapp-inbound',
    kind: 'http',
    write: true,
    target: '>= 0.8 x widget-visitor',
    check: (r) => r.rps >= 0.8 * (rows.find((x) => x.scenario === 'widget-visitor')?.rps ?? Infinity),
  },
  // widget-visitor with 20 enabled rules (10 matching each message) and round robin on, against the
  // same without automation in the same run; each phase until the automation consumer has caught up.
  { name: 'automation', kind: 'automation', target: 'ratio >= 0.85 (without automation)', check: (r) => r.ratio >= 0.85 },
  { name: 'webhooks', kind: 'webhooks', target: '>= 5000 deliveries/s, p99 < 100 ms', check: (r) => r.rps >= 5000 && r.p99 < 100 },
  { name: 'footprint', kind: 'footprint', target: 'idle RSS after load < 180 MB' },
  { name: 'ingest', kind: 'ingest', target: '(pipeline, no HTTP)' },
];

if (opts.help) {
  console.log(
    fs
      .readFileSync(new URL(import.meta.url), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('//'))
      .map((l) => l.slice(3))
      .join('\n'),
  );
  console.log(`\nscenarios: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  process.exit(0);
}
const unknown = positionals.filter((p) => !SCENARIOS.some((s) => s.name === p));
if (unknown.length) {
  console.error(`bench: unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  process.exit(2);
}
if (opts.db !== 'sqlite' && opts.db !== 'postgres') {
  console.error('bench: --db is sqlite or postgres');
  process.exit(2);
}
const selected = SCENARIOS.filter((s) => !positionals.length || positionals.includes(s.name));
const SMOKE = opts.smoke;
const RUNS = Math.max(1, Number(opts.runs ?? 1));
const NODE_FLAGS = opts['node-flags'] === undefined ? startFlags() : opts['node-flags'].split(/\s+/).filter(Boolean);
const DURATION = Number(opts.duration ?? (SMOKE ? 2 : 10));
const WARMUP = SMOKE ? 1 : 2;
const CONNECTIONS = Number(opts.connections);
const SEED = Number(opts.seed);
const sizes = sizesFor({ smoke: SMOKE, scale: Number(opts.scale) });
const POSTGRES = opts.db === 'postgres';
const PROCESSES = Math.max(1, Number(opts.processes) || 1);
if (PROCESSES > 1 && !POSTGRES) {
  console.error('bench: --processes above 1 needs --db postgres (SQLite is one process)');
  process.exit(2);
}
// --pool N: each server's PARLEY_PG_POOL_SIZE (default: the server's own, 10).
const POOL_ENV = opts.pool === undefined ? {} : { PARLEY_PG_POOL_SIZE: opts.pool };
/** The suite's own token for the server's /metrics (the footprint scenario reads the heap gauges). */
const METRICS_TOKEN = `bench-${process.pid}`;
if (opts.pool !== undefined && !(Number.isInteger(Number(opts.pool)) && Number(opts.pool) >= 1)) {
  console.error('bench: --pool is a whole number of connections, at least 1');
  process.exit(2);
}
if (opts.pool !== undefined && !POSTGRES) {
  console.error('bench: --pool needs --db postgres (the pool is PostgreSQL connections)');
  process.exit(2);
}
const PG_BASE = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
/**
 * Whose PostgreSQL CPU a run counts: the backends of the run's database and the server's own
 * processes, not other suites' backends on a shared machine (bench/lib/cpu.mjs).
 */
const PG_WATCH = POSTGRES && (decodeURIComponent(new URL(PG_BASE).pathname.slice(1)) || new URL(PG_BASE).username || 'postgres');
/** The rate the fixed-rate comparison offers both configurations: this share of one process's saturated rate. */
const FIXED_RATE_SHARE = 0.6;

if (!opts['no-build']) ensureBuilt();
const benchDir = path.join(root, 'bench');
const dataRoot = path.join(benchDir, '.data');
const runId = `${new Date().toISOString().replace(/[:.]/g, '-')}-${opts.db}`;
const runDir = path.join(dataRoot, `run-${process.pid}`);
const cleanups = [];
const loadAtStart = os.loadavg();
let failed = false;
const rows = [];

try {
  await main();
} catch (err) {
  failed = true;
  console.error(`bench: ${err instanceof Error ? err.stack : err}`);
} finally {
  for (const fn of cleanups.reverse()) {
    try {
      await fn();
    } catch (err) {
      console.error(`bench: cleanup failed: ${err}`);
    }
  }
}
process.exit(failed ? 1 : 0);

async function main() {
  console.log(
    `Parley bench: ${opts.db}${PROCESSES > 1 ? ` x${PROCESSES} processes` : ''}${opts.pool ? `, pool ${opts.pool}` : ''}, ${sizes.customers} customers, ${sizes.leads} leads, ${sizes.messages} messages; ${os.cpus().length} cores, node ${process.version}; ${DURATION} s per run, ${CONNECTIONS} connections, ${RUNS} run(s) per scenario (median); server node flags: ${NODE_FLAGS.join(' ') || 'none'}`,
  );
  const { meta, databaseUrl } = await prepareData();
  const ctx = { meta, databaseUrl, dataDir: runDir };

  if (selected.some((s) => s.name === 'startup')) await guarded('startup', () => startupScenario(ctx));

  const needsServer = selected.some((s) => ['http', 'automation', 'webhooks', 'footprint'].includes(s.kind));
  if (needsServer) {
    const profDir = path.join(benchDir, 'results', 'profiles');
    if (opts['cpu-prof'] || opts['sql-profile']) fs.mkdirSync(profDir, { recursive: true });
    const sqlProfile = path.join(profDir, `sql-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    const server = await startServer({
      dataDir: runDir,
      databaseUrl,
      nodeFlags: NODE_FLAGS,
      nodeArgs: opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
      extraEnv: {
        ...POOL_ENV,
        ...(opts['sql-profile'] ? { PARLEY_SQL_PROFILE: sqlProfile } : {}),
        // footprint reads the server's heap gauges from its /metrics.
        ...(selected.some((s) => s.name === 'footprint') ? { PARLEY_METRICS_TOKEN: METRICS_TOKEN } : {}),
      },
    });
    if (opts['sql-profile']) cleanups.push(() => console.log(`SQL profile: ${path.relative(process.cwd(), sqlProfile)}`));
    cleanups.push(() => server.stop());
    ctx.server = server;
    // --processes N: more server processes on the same database; HTTP load is spread over all.
    ctx.bases = [server.base];
    ctx.serverPids = [server.pid];
    for (let i = 1; i < PROCESSES; i++) {
      // The same data folder: the same JWT secret and encryption key, as several machines share them.
      const more = await startServer({ dataDir: runDir, databaseUrl, nodeFlags: NODE_FLAGS, extraEnv: POOL_ENV });
      cleanups.push(() => more.stop());
      ctx.bases.push(more.base);
      ctx.serverPids.push(more.pid);
    }
    await new Promise((r) => setTimeout(r, 1000));
    ctx.rssAtStart = rssMb(server.pid);
    ctx.token = await login(server.base, meta);
    ctx.headers = { authorization: `Bearer ${ctx.token}` };
    const bare = await startHelper(path.join(benchDir, 'lib', 'bare.mjs'));
    cleanups.push(() => bare.stop());
    ctx.bare = bare.url;

    for (const s of selected.filter((x) => x.kind === 'http')) await guarded(s.name, () => httpScenario(ctx, s));
    if (selected.some((s) => s.name === 'automation')) await guarded('automation', () => automationScenario(ctx));
    if (selected.some((s) => s.name === 'webhooks')) await guarded('webhooks', () => webhooksScenario(ctx));
    if (selected.some((s) => s.name === 'footprint')) await guarded('footprint', () => footprintScenario(ctx));
    if (!server.alive()) throw new Error('the server process died during the run');
  }
  if (selected.some((s) => s.name === 'ingest')) await guarded('ingest', () => ingestScenario(ctx));

  printTable();
  writeResults(ctx);
}

async function guarded(name, fn) {
  try {
    await fn();
  } catch (err) {
    failed = true;
    console.error(`bench: scenario ${name} failed: ${err instanceof Error ? err.stack : err}`);
    rows.push({ scenario: name, failed: String(err instanceof Error ? err.message : err) });
  }
}

// ---- Data ------------------------------------------------------------------------------------

async function prepareData() {
  fs.mkdirSync(dataRoot, { recursive: true });
  fs.rmSync(runDir, { recursive: true, force: true });
  cleanups.push(async () => {
    if (!opts.keep) fs.rmSync(runDir, { recursive: true, force: true });
    else console.log(`kept the run's data in ${runDir}`);
  });
  const key = `g${GENERATOR_VERSION}-s${SEED}-${sizes.customers}c-${sizes.leads}l-${sizes.messages}m`;
  if (!POSTGRES) {
    const cached = path.join(dataRoot, `sqlite-${key}`);
    if (!fs.existsSync(path.join(cached, 'bench-meta.json'))) {
      const tmp = `${cached}.tmp-${process.pid}`;
      fs.rmSync(tmp, { recursive: true, force: true });
      cleanups.push(async () => fs.rmSync(tmp, { recursive: true, force: true }));
      const bar = progressReporter('generating the data set');
      const meta = await generate({ dataDir: tmp, seed: SEED, sizes, progress: bar.update });
      bar.done();
      fs.writeFileSync(path.join(tmp, 'bench-meta.json'), JSON.stringify(meta));
      fs.rmSync(cached, { recursive: true, force: true });
      fs.renameSync(tmp, cached);
    } else {
      console.log(`reusing the data set in ${path.relative(root, cached)}`);
    }
    fs.cpSync(cached, runDir, { recursive: true });
    await migrateCopy(runDir);
    return { meta: JSON.parse(fs.readFileSync(path.join(runDir, 'bench-meta.json'), 'utf8')), databaseUrl: undefined };
  }
  // PostgreSQL: a fresh schema per run (test/helpers/database.ts does the same for tests).
  const schema = `bench_${process.pid}_${Date.now().toString(36)}`;
  const databaseUrl = await createSchema(schema);
  cleanups.push(async () => {
    if (opts.keep) return void console.log(`kept the schema ${schema}`);
    await dropSchema(schema);
  });
  fs.mkdirSync(runDir, { recursive: true });
  const bar = progressReporter(`generating the data set in schema ${schema}`);
  const meta = await generate({ dataDir: runDir, databaseUrl, seed: SEED, sizes, progress: bar.update });
  bar.done();
  return { meta, databaseUrl };
}

/**
 * Brings the run's copy of the cached data set up to the build's migrations before any timed start:
 * otherwise a cache generated by an older build is migrated by the first server start, inside the
 * start-up and footprint figures (0015 re-indexes search: ~20 s at 1M messages). The cache itself
 * is never written; delete it to have it generated again by the current build.
 */
async function migrateCopy(dir) {
  const { pathToFileURL } = await import('node:url');
  const dist = (p) => import(pathToFileURL(path.join(root, 'dist', p)).href);
  const { openDatabase } = await dist('db/database.js');
  const { migrateToLatest } = await dist('db/migrate.js');
  const t0 = performance.now();
  const db = await openDatabase({ dataDir: dir });
  try {
    await migrateToLatest(db);
  } finally {
    await db.close();
  }
  const ms = performance.now() - t0;
  if (ms > 1000) console.log(`migrated the run's copy of the data set in ${(ms / 1000).toFixed(1)} s (the cache predates a migration)`);
}

function withSearchPath(url, schema) {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

async function adminQuery(sql) {
  const { pathToFileURL } = await import('node:url');
  const { default: pg } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('pg')).href);
  const client = new pg.Client({ connectionString: PG_BASE });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

/**
 * Transactions committed or rolled back in the run's database so far (pg_stat_database): a batch
 * of sends or messages is one, whatever its size. A busy backend reports its counts at most once a
 * second, so a 10 s window's count is good to a few per cent.
 */
async function pgTransactions() {
  const [row] = await adminQuery(
    `select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = '${String(PG_WATCH).replaceAll("'", "''")}'`,
  );
  return Number(row?.n ?? 0);
}

async function createSchema(schema) {
  await adminQuery(`create schema ${schema}`);
  return withSearchPath(PG_BASE, schema);
}

async function dropSchema(schema) {
  await adminQuery(`drop schema if exists ${schema} cascade`);
}

// ---- Requests --------------------------------------------------------------------------------

async function login(base, meta) {
  const res = await fetch(`${base}/v1.3/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: meta.login, pass: meta.pass }),
  });
  if (res.status !== 200) throw new Error(`login answered ${res.status}: ${await res.text()}`);
  return (await res.json()).accessToken.token;
}

async function call(base, r) {
  const res = await fetch(base + r.path, {
    method: r.method,
    headers: { ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}), ...r.headers },
    body: r.body,
  });
  const text = await res.text();
  if (res.status < 200 || res.status >= 300) throw new Error(`${r.method} ${r.path} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

/** Round-robin over a list, deterministic. */
function cycle(list) {
  if (!list.length) throw new Error('no samples to cycle over (data set too small?)');
  let i = 0;
  return () => list[i++ % list.length];
}

/** The request stream of each HTTP scenario. */
async function requestsOf(ctx, name) {
  const { meta, headers } = ctx;
  const json = (method, p, body) => ({ method, path: p, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const msgra2 = meta.integrations.find((i) => i.type === 'msgra2').id;
  switch (name) {
    case 'leads':
      return () => json('GET', '/v1.3/leads/active?limit=50');
    case 'leads-filtered':
      return () => json('GET', `/v1.3/leads/active?limit=50&sa=${msgra2}&tags=vip`);
    case 'lead': {
      const next = cycle(meta.samples.leads);
      return () => json('GET', `/v1.3/leads/${next()}`);
    }
    case 'history': {
      const next = cycle(meta.samples.history);
      return () => {
        const h = next();
        return json('POST', `/v1.3/messaging/${h.lead}/history/${h.source}`, {});
      };
    }
    case 'customer-search': {
      const next = cycle(CUSTOMER_QUERIES);
      return () => json('POST', '/v1.3/search/customers', { q: next() });
    }
    case 'message-search': {
      const next = cycle(MESSAGE_QUERIES);
      const integrations = cycle(meta.integrations.map((i) => i.id));
      return () => json('POST', `/v1.3/search/${integrations()}`, { q: next() });
    }
    case 'send': {
      const next = cycle(meta.samples.widgetLeads);
      let n = 0;
      return () =>
        json('POST', `/v1.3/messaging/${next()}/send`, { message: { text: `Thanks for waiting, your order ships today (${++n})` } });
    }
    case 'widget-visitor':
      return widgetVisitorRequests(ctx, 'w');
    case 'whatsapp-inbound':
      return whatsappInboundRequests(ctx);
    default:
      throw new Error(`no requests for ${name}`);
  }
}

/** Visitors of the site widget (new sessions through the public protocol), then their messages. */
async function widgetVisitorRequests(ctx, prefix) {
  const { server, meta } = ctx;
  const count = Math.max(20, Math.min(400, CONNECTIONS * 4));
  const tokens = [];
  for (let v = 0; v < count; v++) {
    const text = await call(server.base, {
      method: 'POST',
      path: '/widget/v1/sessions',
      headers: {},
      body: JSON.stringify({ key: meta.widget.key, name: `Bench visitor ${v}` }),
    });
    tokens.push(JSON.parse(text).token);
  }
  const next = cycle(tokens);
  let n = 0;
  const run = `${prefix}${Date.now().toString(36)}`;
  return () => {
    const i = ++n;
    return {
      method: 'POST',
      path: '/widget/v1/messages',
      headers: { authorization: `Bearer ${next()}` },
      body: JSON.stringify({ clientId: `${run}-${i}`, text: `Hello, is the blue hoodie in stock in size M? (${i})` }),
    };
  };
}

/**
 * Meta's webhook posts to a WhatsApp Cloud API number: one text message each from 400 customers,
 * a new wamid every time, signed with the app secret (X-Hub-Signature-256 over the raw body).
 */
async function whatsappInboundRequests(ctx) {
  const { createHmac } = await import('node:crypto');
  const { id, phoneNumberId, appSecret } = ctx.meta.whatsapp;
  const run = Date.now().toString(36);
  let n = 0;
  return () => {
    const i = ++n;
    const from = String(4915100000000 + (i % 400));
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550100000', phone_number_id: phoneNumberId },
                contacts: [{ profile: { name: `Bench customer ${i % 400}` }, wa_id: from }],
                messages: [
                  {
                    from,
                    id: `wamid.bench${run}${i}`,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: 'text',
                    text: { body: `Hello, is the blue hoodie in stock in size M? (${i})` },
                  },
                ],
              },
            },
          ],
        },
      ],
    });
    const signature = `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
    return { method: 'POST', path: `/channels/meta/${id}`, headers: { 'x-hub-signature-256': signature }, body };
  };
}

// ---- Scenarios -------------------------------------------------------------------------------

function median(list, key) {
  const sorted = [...list].sort((a, b) => a[key] - b[key]);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

async function httpScenario(ctx, s) {
  const next = await requestsOf(ctx, s.name);
  // The ceiling answers what the scenario answers: the median-sized of a few sample answers.
  const samples = [];
  for (let i = 0; i < 5; i++) samples.push(await call(ctx.server.base, next()));
  samples.sort((a, b) => a.length - b.length);
  const body = samples[2];
  await call(ctx.bare, { method: 'PUT', path: `/__body/${s.name}`, headers: {}, body });
  const bareNext = () => ({ ...next(), path: `/bare/${s.name}` });

  const runs = [];
  const connections = s.connections ?? CONNECTIONS;
  for (let i = 0; i < RUNS; i++) {
    await runLoad({ base: ctx.bare, next: bareNext, duration: WARMUP, connections });
    const ceiling = await runLoad({ base: ctx.bare, next: bareNext, duration: DURATION, connections });
    await runLoad({ base: ctx.bases.length > 1 ? ctx.bases : ctx.server.base, next, duration: WARMUP, connections });
    const watch = cpuWatch({ serverPids: ctx.serverPids, postgres: PG_WATCH });
    const real = await runLoad({ base: ctx.bases.length > 1 ? ctx.bases : ctx.server.base, next, duration: DURATION, connections });
    const cpu = watch.measure(real.requests);
    runs.push({ ...real, ceiling: ceiling.rps, ratio: real.rps / ceiling.rps, ...(cpu ? { cpu } : {}) });
    progressLine(s.name, runs.at(-1));
  }
  const m = median(runs, 'rps');
  const perProcess = PROCESSES > 1 && s.write && m.cpu ? await againstOneProcess(ctx, s, next, connections, m.cpu) : undefined;
  rows.push({
    scenario: s.name,
    rps: m.rps,
    p50: m.p50,
    p95: m.p95,
    p99: m.p99,
    errors: runs.reduce((a, r) => a + r.errors, 0),
    errorDetail: runs.find((r) => r.errorDetail)?.errorDetail,
    ceiling: m.ceiling,
    ratio: m.ratio,
    bodyBytes: Buffer.byteLength(body),
    connections,
    ...(m.cpu ? { cpu: m.cpu } : {}),
    ...(perProcess ? { perProcess, note: perProcess.note } : {}),
    runs,
  });
}

/**
 * Widget visitors' messages with automation on (round robin on the widget, 20 enabled
 * `message.incoming` rules of which 10 match every message, each adding a tag) against the same
 * load without automation, in the same run and in turn. Automation runs after the commit, so a
 * phase lasts until the automation consumer has read every event the load recorded and finished
 * its runs: the rate is messages / (load + catch-up), and the CPU per message counts the catch-up.
 * Each run goes without / with / without and compares "with" to the mean of the two "without"
 * phases, as a later phase finds warmer caches and a fuller database than an earlier one.
 */
async function automationScenario(ctx) {
  const { pathToFileURL } = await import('node:url');
  const { openDatabase } = await import(pathToFileURL(path.join(root, 'dist', 'db', 'database.js')).href);
  const { sql } = await import(pathToFileURL(createRequireFromRoot().resolve('kysely')).href);
  const db = await openDatabase({ dataDir: ctx.dataDir, databaseUrl: ctx.databaseUrl, poolSize: 2 });
  const base = ctx.bases.length > 1 ? ctx.bases : ctx.server.base;
  const api = (method, p, body) =>
    call(ctx.server.base, { method, path: p, headers: ctx.headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const rules = [];
  const on = async () => {
    await api('PUT', `/v1.3/integrations/${ctx.meta.widget.id}/distribution`, { mode: 'round_robin' });
    for (let i = 0; i < 20; i++) {
      const word = i % 2 ? 'hoodie' : 'refund';
      const text = await api('POST', '/v1.3/automation/rules', {
        name: `bench ${i}`,
        event: 'message.incoming',
        conditions: [{ field: 'message.text', op: 'contains', value: word }],
        actions: [{ type: 'addTag', tag: `bench-${i}` }],
      });
      rules.push(JSON.parse(text).id);
    }
  };
  const off = async () => {
    await api('PUT', `/v1.3/integrations/${ctx.meta.widget.id}/distribution`, { mode: 'off' });
    for (const id of rules.splice(0)) await api('DELETE', `/v1.3/automation/rules/${id}`);
  };
  const k = db.kysely;
  const newest = async () => Number((await k.selectFrom('events').select(sql`max(id)`.as('id')).executeTakeFirst())?.id ?? 0);
  const caughtUp = async (upto) => {
    const cursor = await k.selectFrom('automation_cursors').select('event_id').where('name', '=', 'automation').executeTakeFirst();
    if (!cursor || Number(cursor.event_id) < upto) return false;
    const open = await k.selectFrom('automation_runs').select(sql`count(*)`.as('n')).where('done', '=', 0).executeTakeFirst();
    return Number(open?.n ?? 0) === 0;
  };
  const phase = async (prefix) => {
    const next = await widgetVisitorRequests(ctx, prefix);
    await runLoad({ base, next, duration: WARMUP, connections: CONNECTIONS });
    const watch = cpuWatch({ serverPids: ctx.serverPids, postgres: PG_WATCH });
    const t0 = performance.now();
    const load = await runLoad({ base, next, duration: DURATION, connections: CONNECTIONS });
    const upto = await newest();
    // A consumer that never catches up fails the scenario rather than hanging the suite.
    const deadline = performance.now() + 120_000;
    while (!(await caughtUp(upto))) {
      if (performance.now() > deadline)
        throw new Error(`automation: the consumer did not reach event ${upto} within 120 s of the load's end`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - t0) / 1000;
    const cpu = watch.measure(load.requests);
    return { ...load, rate: load.requests / seconds, catchUpS: seconds - DURATION, ...(cpu ? { cpu } : {}) };
  };
  const runs = [];
  // CPU per message of a phase: server, plus PostgreSQL's backends of the run's database.
  const cpuPer = (p) => (p.cpu ? p.cpu.serverUs + (p.cpu.postgresUs ?? 0) : undefined);
  try {
    for (let i = 0; i < RUNS; i++) {
      const before = await phase(`p${i}`);
      await on();
      const auto = await phase(`a${i}`);
      await off();
      const after = await phase(`q${i}`);
      const plain = meanPhase(before, after);
      const ratio = auto.rate / plain.rate;
      const cpuRatio = cpuPer(auto) && cpuPer(plain) ? cpuPer(plain) / cpuPer(auto) : undefined;
      runs.push({ plain, before, after, auto, ratio, ...(cpuRatio ? { cpuRatio } : {}), rps: auto.rate });
      console.log(
        `  automation: with ${auto.rate.toFixed(0)} msg/s (load ${auto.rps.toFixed(0)} req/s, catch-up ${auto.catchUpS.toFixed(1)} s), ` +
          `without ${plain.rate.toFixed(0)} msg/s (before ${before.rate.toFixed(0)}, after ${after.rate.toFixed(0)}; ` +
          `load ${plain.rps.toFixed(0)} req/s, catch-up ${plain.catchUpS.toFixed(1)} s), ratio ${ratio.toFixed(2)}` +
          (cpuRatio ? `, CPU per message without / with ${cpuPer(plain)} / ${cpuPer(auto)} µs = ${cpuRatio.toFixed(2)}` : '') +
          (auto.cpu && before.cpu && after.cpu
            ? `\n    without (before): ${describeCpu(before.cpu)}\n    with: ${describeCpu(auto.cpu)}\n    without (after): ${describeCpu(after.cpu)}`
            : ''),
      );
    }
  } finally {
    if (rules.length) await off().catch(() => {});
    await db.close();
  }
  const m = median(runs, 'ratio');
  const ratios = runs.map((r) => r.ratio);
  rows.push({
    scenario: 'automation',
    rps: m.auto.rate,
    p50: m.auto.p50,
    p95: m.auto.p95,
    p99: m.auto.p99,
    errors: runs.reduce((a, r) => a + r.auto.errors + r.plain.errors, 0),
    ceiling: m.plain.rate,
    ratio: m.ratio,
    spread: { min: Math.min(...ratios), max: Math.max(...ratios) },
    connections: CONNECTIONS,
    runs,
  });
}

/** The mean of two phases of the same load: rates, latencies and CPU per message. */
function meanPhase(a, b) {
  const mean = (x, y) => (x === undefined || y === undefined ? undefined : (x + y) / 2);
  const out = { ...a };
  for (const key of ['rate', 'rps', 'catchUpS', 'p50', 'p95', 'p99']) out[key] = mean(a[key], b[key]);
  out.requests = a.requests + b.requests;
  out.errors = a.errors + b.errors;
  if (a.cpu && b.cpu) {
    out.cpu = { ...a.cpu };
    for (const key of Object.keys(a.cpu)) {
      const m = mean(a.cpu[key], b.cpu[key]);
      if (typeof m === 'number') out.cpu[key] = key === 'idle' ? m : Math.round(m);
    }
  }
  return out;
}

function createRequireFromRoot() {
  return createRequire(path.join(root, 'package.json'));
}

/**
 * With --processes N, what a write request costs in CPU (server and PostgreSQL) with N processes
 * against the first process alone (docs/performance.md, "Several processes"). That ratio, not
 * req/s, is what carries to a machine with more cores. Measured twice:
 * - at full load, as the scenario ran: on two cores the N processes share them with PostgreSQL
 *   and the load generator, so every call is dearer; this measures the machine as much as the
 *   request;
 * - at a fixed rate, FIXED_RATE_SHARE of what one process sustained here, offered to one process
 *   and to N in turn (paced, open loop: runPaced), so that neither configuration saturates the
 *   cores; the order alternates each round, and the median ratio is printed with its spread.
 */
async function againstOneProcess(ctx, s, next, connections, cpuN) {
  await runLoad({ base: ctx.server.base, next, duration: WARMUP, connections });
  const watch = cpuWatch({ serverPids: [ctx.server.pid], postgres: PG_WATCH });
  const one = await runLoad({ base: ctx.server.base, next, duration: DURATION, connections });
  const cpu1 = watch.measure(one.requests);
  if (!cpu1) return undefined;
  const server = cpuN.serverUs / cpu1.serverUs;
  const postgres = cpu1.postgresUs ? cpuN.postgresUs / cpu1.postgresUs : undefined;
  const ratios = (n, o) =>
    `server ${(n.serverUs / o.serverUs).toFixed(2)}x (${n.serverUs} / ${o.serverUs} µs)${
      o.postgresUs ? `, PostgreSQL ${(n.postgresUs / o.postgresUs).toFixed(2)}x (${n.postgresUs} / ${o.postgresUs} µs)` : ''
    }`;
  console.log(
    `  ${s.name}: at full load, CPU per request ${PROCESSES} processes / 1: ${ratios(cpuN, cpu1)}; one process ${one.rps.toFixed(0)} req/s`,
  );

  const rate = opts['fixed-rate'] ? Number(opts['fixed-rate']) : Math.max(10, Math.round(FIXED_RATE_SHARE * one.rps));
  const rounds = [];
  for (let i = 0; i < Math.max(3, RUNS); i++) {
    const got = {};
    for (const which of i % 2 ? ['n', 'one'] : ['one', 'n']) {
      const base = which === 'one' ? ctx.server.base : ctx.bases;
      await runPaced({ base, next, duration: WARMUP, rate });
      const w = cpuWatch({ serverPids: which === 'one' ? [ctx.server.pid] : ctx.serverPids, postgres: PG_WATCH });
      // What the processes left without load use meanwhile (their timers and pollers): a cost of
      // each process, not of a request, that N processes pay on top at any rate.
      const idle = which === 'one' ? cpuWatch({ serverPids: ctx.serverPids.slice(1), postgres: false }) : undefined;
      const t0 = performance.now();
      const tx0 = await pgTransactions();
      const r = await runPaced({ base, next, duration: DURATION, rate });
      // The read's own connection is one transaction.
      const transactions = (await pgTransactions()) - tx0 - 1;
      const idleUs = idle?.measure(1)?.serverUs;
      got[which] = {
        rps: r.rps,
        errors: r.errors,
        p50: r.p50,
        cpu: w.measure(r.requests),
        transactionsPerRequest: r.requests ? transactions / r.requests : undefined,
        ...(idleUs === undefined ? {} : { idleMsPerS: idleUs / (performance.now() - t0) }),
      };
    }
    if (!got.one.cpu || !got.n.cpu) return undefined;
    const round = {
      one: got.one,
      n: got.n,
      server: got.n.cpu.serverUs / got.one.cpu.serverUs,
      postgres: got.one.cpu.postgresUs ? got.n.cpu.postgresUs / got.one.cpu.postgresUs : undefined,
      transactions: got.one.transactionsPerRequest ? got.n.transactionsPerRequest / got.one.transactionsPerRequest : undefined,
    };
    rounds.push(round);
    console.log(
      `    at ${rate} req/s, round ${i + 1}: ${ratios(got.n.cpu, got.one.cpu)}; transactions per request ${got.one.transactionsPerRequest?.toFixed(2)} / ${got.n.transactionsPerRequest?.toFixed(2)}; answered ${got.one.rps.toFixed(0)} / ${got.n.rps.toFixed(0)} req/s, p50 ${got.one.p50?.toFixed(1)} / ${got.n.p50?.toFixed(1)} ms, ` +
        `machine ${Math.round((got.one.cpu.idle ?? 0) * 100)}% / ${Math.round((got.n.cpu.idle ?? 0) * 100)}% idle` +
        (got.one.idleMsPerS === undefined ? '' : `; the processes without load ${(got.one.idleMsPerS * 1000).toFixed(0)} µs of CPU per s`),
    );
  }
  const spreadOf = (key) => {
    const values = rounds.map((r) => r[key]).filter((v) => v !== undefined);
    if (!values.length) return undefined;
    const sorted = [...values].sort((a, b) => a - b);
    return { median: sorted[Math.floor((sorted.length - 1) / 2)], min: sorted[0], max: sorted.at(-1) };
  };
  const fixed = { rate, server: spreadOf('server'), postgres: spreadOf('postgres'), transactions: spreadOf('transactions'), rounds };
  const show = (x) => `${x.median.toFixed(2)}x (${x.min.toFixed(2)}-${x.max.toFixed(2)})`;
  const note = `CPU per request at ${rate} req/s, ${PROCESSES} processes / 1, median of ${rounds.length} alternated rounds (spread): server ${show(fixed.server)}${
    fixed.postgres ? `, PostgreSQL ${show(fixed.postgres)}` : ''
  }${fixed.transactions ? `; transactions per request ${show(fixed.transactions)}` : ''}; at full load ${server.toFixed(2)}x${postgres === undefined ? '' : ` / ${postgres.toFixed(2)}x`}; target <= 1.15x`;
  console.log(`  ${s.name}: ${note}`);
  return { server, postgres, one: cpu1, oneRps: one.rps, fixed, note };
}

function progressLine(name, r) {
  console.log(
    `  ${name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50?.toFixed(1)} ms, p95 ${r.p95?.toFixed(1)} ms, p99 ${r.p99?.toFixed(1)} ms, errors ${r.errors}${r.ceiling ? `, ceiling ${r.ceiling.toFixed(0)} req/s, ratio ${r.ratio.toFixed(2)}` : ''}${r.cpu ? `\n    ${describeCpu(r.cpu)}` : ''}`,
  );
}

/** Start-up to the first 200 of GET /health: on the data set, and on an empty data folder / schema. */
async function startupScenario(ctx) {
  const times = { data: [], empty: [] };
  const cpu = { data: [], empty: [] };
  const n = SMOKE ? 1 : Math.max(3, RUNS);
  for (let i = 0; i < n; i++) {
    const s = await startServer({ dataDir: runDir, databaseUrl: ctx.databaseUrl, nodeFlags: NODE_FLAGS });
    times.data.push(s.startupMs);
    cpu.data.push(s.startupCpuMs);
    await s.stop();
    const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-empty-'));
    let url;
    let schema;
    if (POSTGRES) {
      schema = `bench_empty_${process.pid}_${i}`;
      url = await createSchema(schema);
    }
    try {
      const e = await startServer({ dataDir: emptyDir, databaseUrl: url, nodeFlags: NODE_FLAGS });
      times.empty.push(e.startupMs);
      cpu.empty.push(e.startupCpuMs);
      await e.stop();
    } finally {
      fs.rmSync(emptyDir, { recursive: true, force: true });
      if (schema) await dropSchema(schema);
    }
  }
  const sorted = (l) => [...l].sort((a, b) => a - b);
  const data = sorted(times.data);
  const empty = sorted(times.empty);
  const cpuData = percentile(sorted(cpu.data), 50);
  const cpuEmpty = percentile(sorted(cpu.empty), 50);
  const row = {
    scenario: 'startup',
    p50: percentile(data, 50),
    p99: data.at(-1),
    errors: 0,
    note: `data set: median ${percentile(data, 50).toFixed(0)} ms (max ${data.at(-1).toFixed(0)}); empty: median ${percentile(empty, 50).toFixed(0)} ms; ${n} runs; server CPU to the first answer (median): data set ${cpuData.toFixed(0)} ms, empty ${cpuEmpty.toFixed(0)} ms`,
    value: percentile(data, 50),
    emptyMedian: percentile(empty, 50),
    runs: times,
    cpu,
  };
  console.log(`  startup: ${row.note}`);
  rows.push(row);
}

/**
 * Webhook fan-out: 5 endpoints on local receivers (5 ports: 5 hosts to the sender), events made by
 * widget visitor messages over HTTP. Two phases:
 * - throughput: visitor messages as fast as the server takes them for the run's duration, then until
 *   every delivery is made; deliveries/s = deliveries / (first event -> last delivery);
 * - latency: visitor messages at a steady rate the server sustains (half the measured delivery rate;
 *   paced, open loop: runPaced), event-to-delivery p50/p99 from the event's commit time
 *   (events.created_at) to its arrival.
 */
async function webhooksScenario(ctx) {
  const receiver = await startHelper(path.join(benchDir, 'lib', 'receiver.mjs'), ['5'], { ports: 5 });
  cleanups.push(() => receiver.stop());
  const probe = await openProbe({ dataDir: runDir, databaseUrl: ctx.databaseUrl });
  cleanups.push(() => probe.close());
  const hooks = [];
  for (let i = 0; i < 5; i++) {
    const text = await call(ctx.server.base, {
      method: 'POST',
      path: '/v1.3/webhooks',
      headers: ctx.headers,
      body: JSON.stringify({ url: `${receiver.endpoints[i]}/hook/${i}`, name: `bench ${i}` }),
    });
    hooks.push(JSON.parse(text).id);
  }
  try {
    const next = await widgetVisitorRequests(ctx, 'h');
    // One message first: the visitors' customers and leads exist before the phases (fewer extra events).
    for (let i = 0; i < Math.max(20, Math.min(400, CONNECTIONS * 4)); i++) await call(ctx.server.base, next());
    const phase = async (label, load) => {
      await drain(probe, 0);
      const firstEvent = ((await probe.all('select coalesce(max(id), 0) as id from events'))[0].id ?? 0) + 1;
      await call(receiver.url, { method: 'GET', path: '/__reset', headers: {} });
      const started = Date.now();
      // CPU per delivery of the servers (ingest, fan-out and sends together) and of PostgreSQL:
      // steadier than deliveries/s on a machine shared with other work.
      const watch = cpuWatch({ serverPids: ctx.serverPids, postgres: PG_WATCH });
      const ingest = await load();
      // Requests still in flight when the load generator stopped are answered (and make events) after.
      await new Promise((r) => setTimeout(r, 500));
      const loadOver = Date.now();
      // The servers' CPU while the load ran and while the backlog drained, in cores: well under 1
      // per process with the machine idle means the figure is bound by waits (commits, the pool);
      // with the machine busy, by other work on it.
      const usedDuringLoad = watch.measure(1);
      const pending = await drain(probe, firstEvent);
      const used = watch.measure(1);
      const drained = Date.now();
      const arrivals = JSON.parse(await call(receiver.url, { method: 'GET', path: '/__dump', headers: {} }));
      const events = await probe.all(`select id, created_at from events where id >= ${firstEvent}`);
      const createdAt = new Map(events.map((e) => [`msg_${e.id}`, e.created_at]));
      const dead = (await probe.all(`select count(*) as n from deliveries where event_id >= ${firstEvent} and status = 'dead'`))[0].n;
      const latencies = arrivals
        .filter(([id]) => createdAt.has(id))
        .map(([id, at]) => at - createdAt.get(id))
        .sort((a, b) => a - b);
      const last = arrivals.reduce((m, a) => Math.max(m, a[1]), started);
      const seconds = (last - started) / 1000;
      // The backlog left when the load was over, delivered with no ingest beside it: the worker's own pace.
      const tail = arrivals.filter(([id, at]) => createdAt.has(id) && at > loadOver).length;
      const tailSeconds = (last - loadOver) / 1000;
      const r = {
        label,
        events: events.length,
        deliveries: latencies.length,
        seconds,
        deliveriesPerSecond: latencies.length / seconds,
        p50: percentile(latencies, 50),
        p95: percentile(latencies, 95),
        p99: percentile(latencies, 99),
        errors: ingest.errors + pending + dead,
        ingest,
        afterLoad: { deliveries: tail, seconds: tailSeconds, deliveriesPerSecond: tail >= 1000 ? tail / tailSeconds : undefined },
        cpuPerDelivery: used && {
          serverUs: Math.round(used.serverUs / Math.max(1, latencies.length)),
          ...(used.postgresUs === undefined ? {} : { postgresUs: Math.round(used.postgresUs / Math.max(1, latencies.length)) }),
        },
        serverCores: used && {
          duringLoad: usedDuringLoad.serverUs / 1000 / Math.max(1, loadOver - started),
          afterLoad: (used.serverUs - usedDuringLoad.serverUs) / 1000 / Math.max(1, drained - loadOver),
        },
      };
      const afterLoad = r.afterLoad.deliveriesPerSecond
        ? ` (the last ${tail} after the load: ${r.afterLoad.deliveriesPerSecond.toFixed(0)}/s)`
        : '';
      const cpu = r.cpuPerDelivery
        ? `; CPU per delivery: server ${r.cpuPerDelivery.serverUs} µs${r.cpuPerDelivery.postgresUs === undefined ? '' : `, PostgreSQL ${r.cpuPerDelivery.postgresUs} µs`}` +
          `; server cores busy ${r.serverCores.duringLoad.toFixed(2)} during the load (machine ${Math.round((usedDuringLoad.idle ?? 0) * 100)}% idle), ${r.serverCores.afterLoad.toFixed(2)} after`
        : '';
      console.log(
        `  webhooks ${label}: ${r.events} events (${ingest.requests} visitor messages, ${ingest.rps.toFixed(0)}/s) -> ${r.deliveries} deliveries in ${seconds.toFixed(1)} s = ${r.deliveriesPerSecond.toFixed(0)}/s${afterLoad}; event -> delivery p50 ${r.p50} ms, p99 ${r.p99} ms${cpu}`,
      );
      return r;
    };
    // With --processes N the visitors' messages are spread over every process, as in the other
    // HTTP scenarios (each process's worker delivers); the paced latency phase goes through the first.
    const throughput = await phase('throughput', () =>
      runLoad({ base: ctx.bases.length > 1 ? ctx.bases : ctx.server.base, next, duration: DURATION, connections: CONNECTIONS }),
    );
    const eventsPerMessage = throughput.events / Math.max(1, throughput.ingest.requests);
    const rate = Math.max(10, Math.floor((throughput.deliveriesPerSecond * 0.5) / 5 / Math.max(1, eventsPerMessage)));
    // A steady rate (runPaced): autocannon's overallRate sends each second's requests in a burst.
    const latency = await phase(`latency at ${rate} messages/s`, () => runPaced({ base: ctx.server.base, next, duration: DURATION, rate }));
    rows.push({
      scenario: 'webhooks',
      rps: throughput.deliveriesPerSecond,
      p50: latency.p50,
      p95: latency.p95,
      p99: latency.p99,
      errors: throughput.errors + latency.errors,
      note:
        `throughput: ${throughput.events} events -> ${throughput.deliveries} deliveries to 5 endpoints in ${throughput.seconds.toFixed(1)} s (backlog p50 ${throughput.p50} ms` +
        `${throughput.afterLoad.deliveriesPerSecond ? `; after the load ${throughput.afterLoad.deliveriesPerSecond.toFixed(0)}/s` : ''}); ` +
        `latency (p50/p99 columns) at ${rate} visitor messages/s = ${latency.deliveriesPerSecond.toFixed(0)} deliveries/s`,
      throughput,
      latency,
    });
  } finally {
    // Later scenarios must not pay for the fan-out (and no delivery is in flight when it goes).
    await drain(probe, 0);
    for (const id of hooks)
      await call(ctx.server.base, { method: 'DELETE', path: `/v1.3/webhooks/${id}`, headers: ctx.headers }).catch(() => {});
  }
}

/** Waits until no delivery of events from `firstEvent` on is pending; returns how many still are. */
async function drain(probe, firstEvent) {
  const deadline = Date.now() + (SMOKE ? 30_000 : 180_000);
  for (;;) {
    const pending = (await probe.all(`select count(*) as n from deliveries where event_id >= ${firstEvent} and status = 'pending'`))[0].n;
    if (pending === 0 || Date.now() > deadline) return pending;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * RSS idle after the load, twice: 5 s after (what the load left) and 35 s after, once the server's
 * idle collections had their turns (src/memory-release.ts: the second, after 7.5 s idle, is the one
 * V8 lets shrink new space). The figure judged is the second: what an idle server holds.
 */
async function footprintScenario(ctx) {
  const mb = (b) => (b / 1048576).toFixed(0);
  const sample = async () => {
    const rss = rssMb(ctx.server.pid);
    return { rss, parts: await memoryParts(ctx, rss) };
  };
  const show = (label, { rss, parts }) => {
    console.log(
      `  footprint ${label}: RSS ${rss.toFixed(0)} MB` +
        (parts
          ? `; V8 heap ${mb(parts.heapUsed)} used / ${mb(parts.heapTotal)} MB held (new space ${mb(parts.newSpace)} MB), external ${mb(parts.external)} MB, ` +
            `file-backed ${mb(parts.file)} MB (code), the rest ${mb(parts.rest)} MB (malloc: SQLite, pg buffers, libuv, OpenSSL)`
          : ''),
    );
  };
  await new Promise((r) => setTimeout(r, SMOKE ? 1000 : 5000));
  const soon = await sample();
  show(SMOKE ? '1 s after the load' : '5 s after the load', soon);
  await new Promise((r) => setTimeout(r, SMOKE ? 1000 : 30000));
  const idle = await sample();
  show(SMOKE ? '2 s after the load' : '35 s after the load', idle);
  rows.push({
    scenario: 'footprint',
    errors: 0,
    value: Math.max(ctx.rssAtStart, idle.rss),
    rssAtStart: ctx.rssAtStart,
    rssSoonAfterLoad: soon.rss,
    rssAfterLoad: idle.rss,
    memorySoonAfterLoad: soon.parts,
    memory: idle.parts,
    note: `RSS idle after start ${ctx.rssAtStart.toFixed(0)} MB; 5 s after the load ${soon.rss.toFixed(0)} MB, idle 35 s after ${idle.rss.toFixed(0)} MB (data set: ${sizes.messages} messages)`,
  });
  console.log(`  footprint: ${rows.at(-1).note}`);
}

/**
 * Where the server's resident memory is: V8's heap and external memory from its /metrics
 * (prom-client's nodejs gauges, the server started with PARLEY_METRICS_TOKEN by the suite), the
 * file-backed pages from /proc/<pid>/status (the node binary and libraries), the rest is malloc.
 */
async function memoryParts(ctx, rssMbNow) {
  try {
    const res = await fetch(`${ctx.server.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    if (res.status !== 200) return undefined;
    const text = await res.text();
    const gauge = (name) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
    const status = fs.readFileSync(`/proc/${ctx.server.pid}/status`, 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    const heapUsed = gauge('parley_nodejs_heap_size_used_bytes');
    const heapTotal = gauge('parley_nodejs_heap_size_total_bytes');
    const external = gauge('parley_nodejs_external_memory_bytes');
    const newSpace = gauge('parley_nodejs_heap_space_size_total_bytes\\{space="new"\\}');
    const file = kb('RssFile') + kb('RssShmem');
    const rest = rssMbNow * 1048576 - file - heapTotal - external;
    return { heapUsed, heapTotal, newSpace, external, file, rest };
  } catch {
    return undefined;
  }
}

/** The ingest pipeline without HTTP (bench/ingest.mjs in its own process, its own fresh database). */
async function ingestScenario(_ctx) {
  const { execFileSync } = await import('node:child_process');
  const env = { ...process.env };
  delete env.DATABASE_URL;
  let schema;
  if (POSTGRES) {
    schema = `bench_ingest_${process.pid}`;
    env.DATABASE_URL = await createSchema(schema);
  }
  try {
    const out = execFileSync(process.execPath, [path.join(benchDir, 'ingest.mjs'), '--json', '--no-build', ...(SMOKE ? ['--smoke'] : [])], {
      cwd: root,
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const r = JSON.parse(out.trim().split('\n').at(-1));
    rows.push({
      scenario: 'ingest',
      rps: r.messagesPerSecond,
      p50: r.p50ms,
      p99: r.p99ms,
      errors: 0,
      note: `${r.messages} messages, ${r.concurrency} concurrent, each committed (no HTTP)`,
    });
    console.log(`  ingest: ${rows.at(-1).note}: ${r.messagesPerSecond}/s`);
  } finally {
    if (schema) await dropSchema(schema);
  }
}

// ---- Output ----------------------------------------------------------------------------------

function printTable() {
  const fmt = (v, d = 0) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(d) : '-');
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'ceiling/s', 'ratio', 'target', 'met'];
  const table = rows.map((r) => {
    const def = SCENARIOS.find((s) => s.name === r.scenario);
    let met = '';
    if (r.failed) met = 'FAILED';
    else if (def?.check) met = def.check(r) ? 'yes' : 'no';
    else if (r.scenario === 'startup') met = r.value < 800 && r.emptyMedian < 500 ? 'yes' : 'no';
    else if (r.scenario === 'footprint') met = r.value < 180 ? 'yes' : 'no';
    const target = def?.target ?? '';
    const p50 = r.scenario === 'footprint' ? '-' : fmt(r.p50, 1);
    return [r.scenario, fmt(r.rps), p50, fmt(r.p99, 1), String(r.errors ?? '-'), fmt(r.ceiling), fmt(r.ratio, 2), target, met];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 || i >= 7 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(`\n${line(header)}`);
  for (const row of table) console.log(line(row));
  const notes = rows.filter((r) => r.note || r.failed);
  if (notes.length) console.log('');
  for (const r of notes) console.log(`${r.scenario}: ${r.failed ? `FAILED: ${r.failed}` : r.note}`);
  const searchRow = rows.find((r) => r.scenario === 'message-search');
  if (searchRow) console.log(`message-search: p95 ${fmt(searchRow.p95, 1)} ms`);
  console.log('\n(targets are printed for reading only; the exit code reflects errors, never figures)');
}

function writeResults(ctx) {
  const dir = path.join(benchDir, 'results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${runId}${SMOKE ? '-smoke' : ''}.json`);
  const result = {
    at: new Date().toISOString(),
    dialect: opts.db,
    processes: PROCESSES,
    ...(opts.pool ? { poolSize: Number(opts.pool) } : {}),
    smoke: SMOKE,
    sizes,
    seed: SEED,
    durationSeconds: DURATION,
    connections: CONNECTIONS,
    runsPerScenario: RUNS,
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model,
      memoryMb: Math.round(os.totalmem() / 1048576),
      loadavgAtStart: loadAtStart,
      loadavgAtEnd: os.loadavg(),
      node: process.version,
      serverNodeFlags: NODE_FLAGS,
    },
    rows,
  };
  fs.writeFileSync(file, JSON.stringify(result, null, 2));
  console.log(`results: ${path.relative(root, file)}`);
  void ctx;
}
