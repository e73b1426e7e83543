// Server CPU time per request of the read scenarios: user + system time of the server process
// (/proc/<pid>/stat) divided by the 2xx answers it gave under load. On a machine shared with other
// work, requests/s move by 2-3x between runs; CPU per request moves far less, so it is the figure
// to compare two builds with. Linux only; SQLite, on the cached bench data set.
//
//   node bench/cpu-per-request.mjs [--duration S] [--ceiling] [--cpu-prof] [scenario...]
//
// Scenarios: history, lead, leads, leads-filtered (default: all four), the same requests as
// bench/run.mjs. --ceiling also measures the bare fastify route answering each scenario's answer.
// To compare with another build, run this script from a copy of that tree (it uses its own dist/);
// build first (npx tsc -p tsconfig.build.json). Data: the data set `npm run bench` generates and
// caches in bench/.data (default seed and size), copied per run and migrated by the server's start.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { root } from '../scripts/ensure-built.mjs';
import { GENERATOR_VERSION, sizesFor } from './generate.mjs';
import { processCpu } from './lib/cpu.mjs';
import { runLoad } from './lib/load.mjs';
import { startHelper, startServer } from './lib/processes.mjs';

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    duration: { type: 'string', default: '5' },
    ceiling: { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
  },
});
const DURATION = Number(opts.duration);
const CONNECTIONS = 50;

// The data set of `npm run bench` (default seed and size), as bench/run.mjs names its cache.
const sizes = sizesFor({});
const cached = path.join(root, 'bench', '.data', `sqlite-g${GENERATOR_VERSION}-s1-${sizes.customers}c-${sizes.leads}l-${sizes.messages}m`);
if (!fs.existsSync(path.join(cached, 'bench-meta.json'))) {
  console.error(`cpu-per-request: no data set in ${path.relative(root, cached)} (run npm run bench first)`);
  process.exit(2);
}
const meta = JSON.parse(fs.readFileSync(path.join(cached, 'bench-meta.json'), 'utf8'));
const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-cpu-'));
fs.cpSync(cached, runDir, { recursive: true });

const profDir = path.join(root, 'bench', 'results', 'profiles');
if (opts['cpu-prof']) fs.mkdirSync(profDir, { recursive: true });
const server = await startServer({
  dataDir: runDir,
  timeoutMs: 300_000,
  extraEnv: { PARLEY_WORKERS: 'off' },
  nodeArgs: opts['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [],
});
const bare = opts.ceiling ? await startHelper(path.join(root, 'bench', 'lib', 'bare.mjs')) : undefined;
try {
  const login = await fetch(`${server.base}/v1.3/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: meta.login, pass: meta.pass }),
  });
  const headers = { authorization: `Bearer ${(await login.json()).accessToken.token}` };
  const msgra2 = meta.integrations.find((i) => i.type === 'msgra2').id;
  const cycle = (list) => {
    let i = 0;
    return () => list[i++ % list.length];
  };
  const streams = {
    history: () => {
      const next = cycle(meta.samples.history);
      return () => {
        const h = next();
        return { method: 'POST', path: `/v1.3/messaging/${h.lead}/history/${h.source}`, headers, body: '{}' };
      };
    },
    lead: () => {
      const next = cycle(meta.samples.leads);
      return () => ({ method: 'GET', path: `/v1.3/leads/${next()}`, headers });
    },
    leads: () => () => ({ method: 'GET', path: '/v1.3/leads/active?limit=50', headers }),
    'leads-filtered': () => () => ({ method: 'GET', path: `/v1.3/leads/active?limit=50&sa=${msgra2}&tags=vip`, headers }),
  };
  const names = positionals.length ? positionals : Object.keys(streams);
  const unknown = names.filter((n) => !streams[n]);
  if (unknown.length) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${Object.keys(streams).join(', ')}`);

  const measure = async (pid, base, next) => {
    await runLoad({ base, next, duration: 2, connections: CONNECTIONS });
    const before = processCpu(pid);
    const load = await runLoad({ base, next, duration: DURATION, connections: CONNECTIONS });
    const after = processCpu(pid);
    const us = (t) => Math.round(t / Math.max(1, load.requests));
    const user = us(after.user - before.user);
    const system = us(after.system - before.system);
    return { ...load, cpu: user + system, user, system };
  };

  if (!server.alive()) throw new Error('the server exited');
  console.log(`server CPU per request, ${DURATION} s, ${CONNECTIONS} connections, load average ${os.loadavg()[0].toFixed(1)}`);
  for (const name of names) {
    const r = await measure(server.pid, server.base, streams[name]());
    const row = [
      name.padEnd(15),
      `${Math.round(r.rps)} req/s`.padStart(11),
      `p50 ${r.p50.toFixed(1)} p99 ${r.p99.toFixed(1)} ms`.padEnd(24),
    ];
    console.log(`${row.join('  ')}  server CPU ${r.cpu} us/request (user ${r.user}, system ${r.system}), errors ${r.errors}`);
    if (bare) {
      const sample = streams[name]()();
      const res = await fetch(server.base + sample.path, {
        method: sample.method,
        headers: { ...sample.headers, ...(sample.body ? { 'content-type': 'application/json' } : {}) },
        body: sample.body,
      });
      const body = await res.text();
      await fetch(`${bare.url}/__body/${name}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
      const inner = streams[name]();
      const c = await measure(bare.pid, bare.url, () => ({ ...inner(), path: `/bare/${name}` }));
      console.log(
        `${'  ceiling'.padEnd(15)}  ${`${Math.round(c.rps)} req/s`.padStart(11)}  ${`(${body.length} B answer)`.padEnd(24)}  CPU ${c.cpu} us/request`,
      );
    }
  }
  if (!server.alive()) throw new Error('the server exited during the run: the figures are not its own');
} finally {
  await bare?.stop();
  await server.stop();
  fs.rmSync(runDir, { recursive: true, force: true });
}
