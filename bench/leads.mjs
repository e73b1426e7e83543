// Lead lists under load (issue 5, "Performance"; not a test: it prints figures).
//   One account with --leads leads (default 100k) and --messages messages (default 1M) in the
//   embedded SQLite database; the real server process; autocannon with --connections (50) for
//   --duration seconds on:
//     bare     a bare fastify route answering a JSON body of the same size (same run, same machine)
//     active   GET /v1.3/leads/active?limit=50
//     filtered GET /v1.3/leads/active?limit=50 with two filters (an integration and a tag)
//   Prints requests/s, p50, p99 and the ratio to the bare route. Targets: ratio >= 0.6, p99 < 25 ms.
// Usage: node bench/leads.mjs [--leads 100000] [--messages 1000000] [--duration 10] [--connections 50]
//        node bench/leads.mjs --smoke      (small data, 2 s runs: what CI runs)
//        --data <folder>: seed there once and keep it; later runs with the same folder reuse it
//        --no-build: use dist/ as it is (otherwise it is rebuilt when older than the sources)
// autocannon comes from the project's node_modules, or from the folder AUTOCANNON_DIR names.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

const { values } = parseArgs({
  options: {
    leads: { type: 'string' },
    messages: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string', default: '50' },
    smoke: { type: 'boolean', default: false },
    bare: { type: 'string' },
    data: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
});

if (values.bare) await serveBare(values.bare);
else await main();

/** Child mode: a bare fastify route answering the given JSON file's value, serialized per request. */
async function serveBare(file) {
  const { default: Fastify } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('fastify')).href);
  const body = JSON.parse(fs.readFileSync(file, 'utf8'));
  const app = Fastify({ logger: false });
  app.get('/bare', async () => body);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  console.log(`serving ${address}`);
}

async function main() {
  const SMOKE = values.smoke;
  const LEADS = Number(values.leads ?? (SMOKE ? 2_000 : 100_000));
  const MESSAGES = Number(values.messages ?? (SMOKE ? 20_000 : 1_000_000));
  const DURATION = Number(values.duration ?? (SMOKE ? 2 : 10));
  const CONNECTIONS = Number(values.connections);
  const autocannon = await loadAutocannon();

  if (!values['no-build']) ensureBuilt();
  const keep = Boolean(values.data);
  const dataDir = values.data ? path.resolve(values.data) : fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-leads-'));
  const seedFile = path.join(dataDir, 'bench-seed.json');
  const children = [];
  try {
    let seeded;
    if (keep && fs.existsSync(seedFile)) {
      seeded = JSON.parse(fs.readFileSync(seedFile, 'utf8'));
      console.log(`reusing the data in ${dataDir}`);
    } else {
      fs.mkdirSync(dataDir, { recursive: true });
      const t0 = performance.now();
      seeded = await seed(dataDir, LEADS, MESSAGES);
      fs.writeFileSync(seedFile, JSON.stringify(seeded));
      console.log(`seeded ${LEADS} leads, ${MESSAGES} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }

    const server = start([path.join(root, 'dist', 'main.js')], {
      PORT: '0',
      HOST: '127.0.0.1',
      PARLEY_DATA_DIR: dataDir,
      PARLEY_LOG_LEVEL: 'info',
      PARLEY_API_RATE_LIMIT: '0',
    });
    children.push(server);
    const base = await server.address;
    const login = await fetch(`${base}/v1.3/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login: seeded.login, pass: seeded.pass }),
    });
    if (login.status !== 200) throw new Error(`login answered ${login.status}`);
    const headers = { authorization: `Bearer ${(await login.json()).accessToken.token}` };
    const active = `${base}/v1.3/leads/active?limit=50`;
    const filtered = `${base}/v1.3/leads/active?limit=50&sa=${seeded.integrations[0]}&tags=vip`;

    const sample = await fetch(active, { headers });
    if (sample.status !== 200) throw new Error(`GET active answered ${sample.status}: ${await sample.text()}`);
    const text = await sample.text();
    const items = JSON.parse(text).length;
    const total = sample.headers.get('x-total-count');
    const bodyFile = path.join(dataDir, 'bare.json');
    fs.writeFileSync(bodyFile, text);
    const bare = start([new URL(import.meta.url).pathname, '--bare', bodyFile], {});
    children.push(bare);
    const bareUrl = `${await bare.address}/bare`;
    console.log(`active page: ${items} leads of ${total}, ${text.length} bytes`);

    const run = async (label, url, hdrs = {}) => {
      await autocannon({ url, connections: CONNECTIONS, duration: 1, headers: hdrs }); // warm-up
      const r = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers: hdrs });
      if (r.non2xx) throw new Error(`${label}: ${r.non2xx} non-2xx answers`);
      return { label, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, timeouts: r.timeouts };
    };
    const results = [await run('bare', bareUrl), await run('active', active, headers), await run('filtered', filtered, headers)];
    const bareRps = results[0].rps;
    console.log(`\n${CONNECTIONS} connections, ${DURATION} s per run, ${os.cpus().length} cores`);
    console.log('route     req/s     p50 ms  p99 ms  ratio  errors');
    for (const r of results) {
      const errors = r.errors ? `${r.errors} (${r.timeouts} timeouts)` : '0';
      console.log(`${r.label.padEnd(9)} ${r.rps.toFixed(0).padStart(7)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${(r.rps / bareRps).toFixed(2).padStart(5)}  ${errors}`);
    }
    if (!SMOKE) {
      const misses = results.slice(1).filter((r) => r.rps / bareRps < 0.6 || r.p99 >= 25 || r.errors);
      console.log(misses.length ? `\nTARGET MISSED by: ${misses.map((r) => r.label).join(', ')} (ratio >= 0.6, p99 < 25 ms)` : '\ntargets met (ratio >= 0.6, p99 < 25 ms)');
    }
  } finally {
    for (const c of children) await c.stop();
    if (!keep) fs.rmSync(dataDir, { recursive: true, force: true });
    else fs.rmSync(path.join(dataDir, 'bare.json'), { force: true });
  }
}

async function loadAutocannon() {
  const dirs = [root, process.env.AUTOCANNON_DIR].filter(Boolean);
  for (const dir of dirs) {
    try {
      const resolved = createRequire(path.join(dir, 'package.json')).resolve('autocannon');
      return (await import(pathToFileURL(resolved).href)).default;
    } catch {
      // try the next place
    }
  }
  console.error('bench/leads: autocannon is not installed (npm install --save-dev autocannon, or AUTOCANNON_DIR=<folder with it>)');
  process.exit(2);
}

/** Spawns a node process; `address` resolves with the URL it logs as "serving <url>". */
function start(args, extraEnv) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  Object.assign(env, extraEnv);
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('close', resolve));
  const address = new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      let msg = line;
      try {
        msg = JSON.parse(line).msg ?? line;
      } catch {
        // plain text line
      }
      const match = typeof msg === 'string' && /serving (http:\/\/\S+)/.exec(msg);
      if (match) resolve(match[1]);
    });
    exited.then((code) => reject(new Error(`${args[0]} exited (${code}) before serving`)));
  });
  return {
    address,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * One account through the domain core (statuses seeded, owner token), then rows written in bulk
 * with better-sqlite3: integrations, customers with a channel each, leads over every status type
 * and the inbox, `MESSAGES` messages spread over the leads, and a "vip" tag on a fifth of them.
 */
async function seed(dataDir, leadCount, messageCount) {
  const dist = (p) => import(pathToFileURL(path.join(root, 'dist', p)).href);
  const { loadConfig } = await dist('config.js');
  const { openCore } = await dist('boot.js');
  const silent = { info() {}, warn() {}, error() {}, debug() {} };
  const config = loadConfig({ PARLEY_DATA_DIR: dataDir, PARLEY_SIGNUP: 'open' });
  const { db, services } = await openCore(config, silent);
  await services.auth.register({ login: 'bench@example.com', pass: 'bench password 1', name: 'Bench' }, '127.0.0.1');
  await db.close();

  const { default: SQLite } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('better-sqlite3')).href);
  const sqlite = new SQLite(path.join(dataDir, 'parley.db'));
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = OFF');
  // The search index triggers call this function; the server registers the same one (db/database.ts).
  sqlite.function('parley_digits', { deterministic: true }, (v) => (typeof v === 'string' ? v.replace(/[^0-9]/g, '') : ''));
  const account = sqlite.prepare('select id from accounts').get().id;
  const owner = sqlite.prepare("select id from users where role = 'owner'").get().id;
  const statuses = sqlite.prepare('select id, type from statuses where account_id = ? order by id').all(account);
  const now = Date.now();
  const DAY = 86_400_000;
  let rnd = 42;
  const random = () => ((rnd = (rnd * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);

  const integrations = [];
  const insertIntegration = sqlite.prepare('insert into integrations (account_id, type, login, external_id, created_at) values (?, ?, ?, ?, ?)');
  for (const type of ['widget', 'msgra2', 'social1_messenger']) {
    integrations.push(Number(insertIntegration.run(account, type, `bench-${type}`, `ext-${type}`, now).lastInsertRowid));
  }
  const customerCount = Math.max(1, Math.floor(leadCount * 0.8));
  const perLead = messageCount / leadCount;
  sqlite.transaction(() => {
    const customer = sqlite.prepare('insert into customers (account_id, name, login, avatar, email, phone, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?)');
    const source = sqlite.prepare("insert into sources (account_id, integration_id, customer_id, external_id, type, sender, created_at) values (?, ?, ?, ?, 'message', ?, ?)");
    const sources = [];
    for (let c = 0; c < customerCount; c++) {
      const id = Number(customer.run(account, `Customer ${c}`, `customer${c}`, `https://avatars.example/${c}.png`, c % 3 ? null : `c${c}@example.com`, c % 4 ? null : '+15550100', now, now).lastInsertRowid);
      const integration = integrations[c % integrations.length];
      sources.push({ customer: id, integration, source: Number(source.run(account, integration, id, `chat-${c}`, `s${c}`, now).lastInsertRowid) });
    }
    const tag = Number(sqlite.prepare("insert into tags (account_id, tag, tag_key, created_at) values (?, 'vip', 'vip', ?)").run(account, now).lastInsertRowid);
    const lead = sqlite.prepare(
      `insert into leads (account_id, integration_id, customer_id, user_id, status_id, status_type, details, amount, unread_count,
        last_message_at, last_message_incoming, response_time, created_at, updated_at) values (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, null, null, ?, ?)`,
    );
    const message = sqlite.prepare(
      'insert into messages (account_id, lead_id, source_id, integration_id, external_id, incoming, text, unread, created_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const finish = sqlite.prepare('update leads set unread_count = ?, last_message_id = ?, last_message_at = ?, last_message_incoming = ?, response_time = ? where id = ?');
    const leadTag = sqlite.prepare('insert into lead_tags (account_id, lead_id, tag_id, created_at) values (?, ?, ?, ?)');
    let messagesLeft = messageCount;
    for (let i = 0; i < leadCount; i++) {
      const s = sources[i % sources.length];
      const roll = random();
      const status = roll < 0.3 ? null : roll < 0.7 ? statuses.find((x) => x.type === 'active') : roll < 0.95 ? statuses.find((x) => x.type === (roll < 0.85 ? 'completed' : 'failed')) : statuses.find((x) => x.type === 'ignore');
      const created = now - Math.floor(random() * 90 * DAY);
      const leadId = Number(lead.run(account, s.integration, s.customer, random() < 0.5 ? owner : null, status?.id ?? null, status?.type ?? 'inbox', `details ${i}`, Math.floor(random() * 10_000), created, created, created).lastInsertRowid);
      const count = i === leadCount - 1 ? messagesLeft : Math.min(messagesLeft, Math.round(perLead * (0.5 + random())));
      messagesLeft -= count;
      let at = created;
      let last = null;
      let unread = 0;
      for (let m = 0; m < count; m++) {
        at += Math.floor(random() * 3_600_000);
        const incoming = random() < 0.6 ? 1 : 0;
        const isUnread = incoming && m >= count - 2 ? 1 : 0;
        unread += isUnread;
        last = { id: Number(message.run(account, leadId, s.source, s.integration, `m-${i}-${m}`, incoming, `message ${m} of lead ${i}: some words a customer would write`, isUnread, at).lastInsertRowid), at, incoming };
      }
      if (last) finish.run(unread, last.id, last.at, last.incoming, last.incoming ? null : 60_000, leadId);
      if (random() < 0.2) leadTag.run(account, leadId, tag, now);
    }
  })();
  sqlite.pragma('wal_checkpoint(TRUNCATE)');
  sqlite.close();
  return { login: 'bench@example.com', pass: 'bench password 1', integrations };
}
