// Child processes of the suite: the real server (dist/main.js), the ceiling and the webhook receiver.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { root } from '../../scripts/ensure-built.mjs';
import { processUs } from './cpu.mjs';

/**
 * A free TCP port on 127.0.0.1 (the server logs at warn level, so it cannot tell us its own): any,
 * or with BENCH_PORTS=<first>-<last> the first free one of that range (machines shared by several
 * runs give each its own range).
 */
export async function freePort() {
  const range = /^(\d+)-(\d+)$/.exec(process.env.BENCH_PORTS ?? '');
  if (!range) return listenOn(0);
  for (let port = Number(range[1]); port <= Number(range[2]); port++) {
    if (taken.has(port)) continue;
    try {
      await listenOn(port);
      taken.add(port);
      return port;
    } catch {
      // in use: the next
    }
  }
  throw new Error(`no free port in BENCH_PORTS ${process.env.BENCH_PORTS}`);
}

/** Ports of BENCH_PORTS handed out by this run (a server may not listen on its port yet). */
const taken = new Set();

function listenOn(port) {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => {
      const { port: bound } = s.address();
      s.close(() => resolve(bound));
    });
  });
}

function cleanEnv(extra) {
  const env = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  return Object.assign(env, extra);
}

/**
 * Spawns a helper script that prints "serving <url>" (and maybe "endpoints <url> ..."); resolves
 * with { url, endpoints, stop }. `ports`: how many ports the helper listens on (receiver.mjs: one
 * per endpoint).
 */
export async function startHelper(script, args = [], { ports = 1 } = {}) {
  // The helper listens on HELPER_PORT (bare.mjs), or on each of HELPER_PORTS (comma-separated,
  // receiver.mjs): ports of BENCH_PORTS when that is set, else any (0).
  const helperPorts = [];
  for (let i = 0; i < ports; i++) helperPorts.push(process.env.BENCH_PORTS ? String(await freePort()) : '0');
  const child = spawn(process.execPath, [script, ...args], {
    cwd: root,
    env: cleanEnv({ HELPER_PORT: helperPorts[0], HELPER_PORTS: helperPorts.join(',') }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('close', resolve));
  let endpoints = [];
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.startsWith('endpoints ')) endpoints = line.slice(10).split(' ');
      const match = /serving (http:\/\/\S+)/.exec(line);
      if (match) resolve(match[1]);
    });
    exited.then((code) => reject(new Error(`${path.basename(script)} exited (${code}) before serving`)));
  });
  return { url, endpoints, pid: child.pid, stop: () => stop(child, exited) };
}

async function stop(child, exited) {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `node dist/main.js` with the suite's environment; resolves once GET /health answers 200,
 * with the time that took from spawn (start-up to first answer) and the server's CPU time until then.
 */
/**
 * The Node.js flags `npm start` runs Parley with (package.json scripts.start: the `--` options
 * between `node` and the script), so that the suite measures the server as users run it.
 */
export function startFlags() {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const words = String(pkg.scripts?.start ?? '').split(/\s+/);
  const flags = [];
  for (const word of words.slice(words.indexOf('node') + 1)) {
    if (!word.startsWith('--')) break;
    flags.push(word);
  }
  return flags;
}

export async function startServer({ dataDir, databaseUrl, nodeArgs = [], nodeFlags = startFlags(), extraEnv = {}, timeoutMs = 60_000 }) {
  const port = await freePort();
  const env = cleanEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    PARLEY_DATA_DIR: dataDir,
    PARLEY_LOG_LEVEL: 'warn',
    PARLEY_API_RATE_LIMIT: '0',
    PARLEY_LOGIN_MAX_PER_IP: '1000',
    PARLEY_WIDGET_SESSIONS_PER_IP: '1000000',
    PARLEY_WIDGET_MESSAGES_PER_MINUTE: '100000000',
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    // Passed through for before/after comparisons of PostgreSQL ingest batching (0: off).
    ...(process.env.PARLEY_PG_INGEST_LANES ? { PARLEY_PG_INGEST_LANES: process.env.PARLEY_PG_INGEST_LANES } : {}),
    ...extraEnv,
  });
  const t0 = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, ...nodeArgs, path.join(root, 'dist', 'main.js')], {
    cwd: root,
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('close', resolve));
  let dead = false;
  exited.then(() => (dead = true));
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (dead) throw new Error('the server exited before answering /health');
    if (performance.now() - t0 > timeoutMs) {
      await stop(child, exited);
      throw new Error(`the server did not answer /health within ${timeoutMs} ms`);
    }
    try {
      const res = await fetch(`${base}/health`);
      await res.arrayBuffer();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  const startupMs = performance.now() - t0;
  // CPU of the server until its first answer (user + system, Linux /proc): steadier than wall time
  // on a shared machine.
  const startupCpuMs = (processUs(child.pid) ?? Number.NaN) / 1000;
  return { base, pid: child.pid, startupMs, startupCpuMs, alive: () => !dead, stop: () => stop(child, exited) };
}

/** Resident memory of a process, in MB (Linux /proc). */
export function rssMb(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

/**
 * The program a child process runs to call the operator CLI (dist/cli.js) with `args` and report
 * its own peak RSS on stderr as `maxrss <kB>` (Linux VmHWM: getrusage's maxRSS keeps the forking
 * parent's across exec). Run with `node --input-type=module -e <script>`.
 */
export function cliChildScript(args) {
  return `
    const { runCli } = await import(${JSON.stringify(new URL('../../dist/cli.js', import.meta.url).href)});
    const code = await runCli(${JSON.stringify(args)});
    const hwm = /VmHWM:\\s+(\\d+) kB/.exec((await import('node:fs')).readFileSync('/proc/self/status', 'utf8'));
    process.stderr.write('maxrss ' + (hwm ? hwm[1] : process.resourceUsage().maxRSS) + '\\n');
    process.exit(code);`;
}
