// Start-up and idle memory of the installed server (not a test: it prints figures).
//   (a) spawn -> first 200 of GET /health, on an empty data folder (embedded SQLite), 5 runs
//   (b) resident memory (VmRSS) of the server process after start-up and a few requests
// Usage: npm run bench:startup [-- --runs 5]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Math.max(1, Number(values.runs) || 5);
const TARGET_STARTUP_MS = 1000;
const TARGET_RSS_MB = 100;
const TIMEOUT_MS = 30_000;

ensureBuilt();

/** Spawns dist/main.js on a free port with a fresh data folder; resolves when it has exited. */
function startServer() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-'));
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  Object.assign(env, { PORT: '0', HOST: '127.0.0.1', PARLEY_DATA_DIR: dataDir, PARLEY_SIGNUP: 'open', PARLEY_LOG_LEVEL: 'info' });
  const t0 = performance.now();
  const child = spawn(process.execPath, [path.join(root, 'dist', 'main.js')], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const address = new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout });
    rl.on('line', (line) => {
      let msg;
      try {
        msg = JSON.parse(line).msg;
      } catch {
        return;
      }
      const match = typeof msg === 'string' && /serving (http:\/\/\S+)/.exec(msg);
      if (match) resolve(match[1]);
    });
    exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before serving`)));
  });
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  return { child, t0, address, exited, cleanup };
}

function deadline(ms, what) {
  let timer;
  const promise = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** Polls GET /health until it answers 200; resolves with the time of that answer. */
async function firstHealthy(base) {
  for (;;) {
    try {
      const res = await fetch(`${base}/health`);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now();
    } catch {
      // Not accepting yet.
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function measureStartup() {
  const server = startServer();
  const limit = deadline(TIMEOUT_MS, 'first 200 of /health');
  try {
    const base = await Promise.race([server.address, limit.promise]);
    const at = await Promise.race([firstHealthy(base), limit.promise]);
    return at - server.t0;
  } finally {
    limit.cancel();
    await server.cleanup();
  }
}

function rssKb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]);
}

async function measureIdleRss() {
  const server = startServer();
  const limit = deadline(TIMEOUT_MS, 'idle RSS run');
  try {
    const base = await Promise.race([server.address, limit.promise]);
    await Promise.race([firstHealthy(base), limit.promise]);
    const afterStart = rssKb(server.child.pid);
    // A few ordinary requests: sign-up (argon2), account reads, health, docs.
    const reg = await fetch(`${base}/v1.3/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login: 'bench@example.com', pass: 'bench password 1', name: 'Bench' }),
    });
    if (reg.status !== 200) throw new Error(`register answered ${reg.status}: ${await reg.text()}`);
    const token = (await reg.json()).accessToken.token;
    for (let i = 0; i < 20; i++) {
      for (const url of ['/v1.3/account/me', '/v1.3/account/me/tariff', '/v1.1/me', '/health']) {
        const res = await fetch(base + url, { headers: { authorization: `Bearer ${token}` } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
      }
    }
    const docs = await fetch(`${base}/docs/openapi.json`);
    await docs.arrayBuffer();
    return { afterStart, afterRequests: rssKb(server.child.pid) };
  } finally {
    limit.cancel();
    await server.cleanup();
  }
}

const mb = (kb) => kb / 1024;
const fmt = (n, digits = 0) => n.toFixed(digits).padStart(8);

const startups = [];
for (let i = 0; i < RUNS; i++) startups.push(await measureStartup());
const sorted = [...startups].sort((a, b) => a - b);
const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
const rss = await measureIdleRss();

console.log(`Parley start-up bench: node ${process.version}, ${os.cpus().length} cpus, ${os.platform()} ${os.arch()}, SQLite, empty data folder\n`);
console.log(`runs (ms): ${startups.map((ms) => ms.toFixed(0)).join(', ')}\n`);
const rows = [
  ['start-up to first 200 /health, min', `${fmt(sorted[0])} ms`, `< ${TARGET_STARTUP_MS} ms`, sorted[0] < TARGET_STARTUP_MS],
  ['start-up to first 200 /health, median', `${fmt(median)} ms`, `< ${TARGET_STARTUP_MS} ms`, median < TARGET_STARTUP_MS],
  ['RSS after start-up', `${fmt(mb(rss.afterStart), 1)} MB`, `< ${TARGET_RSS_MB} MB`, mb(rss.afterStart) < TARGET_RSS_MB],
  ['RSS idle after 81 requests', `${fmt(mb(rss.afterRequests), 1)} MB`, `< ${TARGET_RSS_MB} MB`, mb(rss.afterRequests) < TARGET_RSS_MB],
];
const width = Math.max(...rows.map((r) => r[0].length));
console.log(`${'measure'.padEnd(width)}  ${'value'.padStart(11)}  ${'target'.padEnd(10)}  ok`);
for (const [name, value, target, ok] of rows) console.log(`${name.padEnd(width)}  ${value}  ${target.padEnd(10)}  ${ok ? 'yes' : 'NO'}`);
