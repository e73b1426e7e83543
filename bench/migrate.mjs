// `parley migrate` from a second Parley (a server process on its own data folder, speaking the API)
// into an empty installation: wall time, CPU seconds of the migrating process (per 1k messages: the
// figure a shared machine moves least), the source server's CPU while it was read, peak RSS.
// Target: the source's 10k leads / 100k messages (--scale 0.1) in under 5 minutes with both on
// this machine, the source's CPU kept modest by the default rate. A shared machine's load moves
// wall time: compare builds in the same run (--baseline) and quote the spread of --runs.
//
//   node bench/migrate.mjs [--scale 0.1 | --smoke] [--seed 1] [--rate 100] [--concurrency 8]
//                          [--runs 3] [--pg] [--baseline <root of another build>] [--keep]
//
// --runs N     copy the same source N times, each into an empty target (after the last, a second
//              run into the same target: what a run that finds nothing new costs)
// --pg         the target on PostgreSQL: a fresh schema per run of BENCH_DATABASE_URL (default
//              postgres://postgres@127.0.0.1:5432/test); the source stays on SQLite
// --baseline   also run that build's dist/cli.js (a checkout with `npm run build` done), alternating
//              with this one run by run, against the same source
// The data set is generated into a temporary folder (bench/generate.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { processUs } from './lib/cpu.mjs';
import { startServer } from './lib/processes.mjs';
import { progressReporter } from './lib/progress.mjs';

const { values: opts } = parseArgs({
  options: {
    scale: { type: 'string' },
    smoke: { type: 'boolean' },
    seed: { type: 'string' },
    rate: { type: 'string' },
    concurrency: { type: 'string' },
    runs: { type: 'string' },
    pg: { type: 'boolean' },
    baseline: { type: 'string' },
    keep: { type: 'boolean' },
    help: { type: 'boolean' },
  },
});
if (opts.help) {
  const text = fs.readFileSync(new URL(import.meta.url), 'utf8');
  console.log(
    text
      .split('\n')
      .filter((l) => l.startsWith('//'))
      .map((l) => l.slice(3))
      .join('\n'),
  );
  process.exit(0);
}
ensureBuilt();
const PG_BASE = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const runs = Math.max(1, Number(opts.runs ?? 1));
const builds = [{ name: 'this build', root }];
if (opts.baseline) builds.push({ name: 'baseline', root: path.resolve(opts.baseline) });
const { generate, sizesFor, OWNER_LOGIN, PASSWORD } = await import('./generate.mjs');
const sizes = sizesFor({ smoke: Boolean(opts.smoke), scale: Number(opts.scale ?? 0.1) });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-migrate-'));
const sourceDir = path.join(work, 'source');
const schemas = [];
let server;

try {
  const bar = progressReporter('generating the data set');
  await generate({ dataDir: sourceDir, seed: Number(opts.seed ?? 1), sizes, progress: bar.update });
  bar.done();
  console.log(
    `data set: ${sizes.leads} leads, ${sizes.messages} messages; target on ${opts.pg ? 'PostgreSQL' : 'SQLite'}; ` +
      `${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(1)}, Node ${process.version}`,
  );
  // The source keeps Parley's default per-token limit (6,000 a minute), as a real one does: a run
  // paced past it meets 429s (the summary counts them).
  server = await startServer({ dataDir: sourceDir, extraEnv: { PARLEY_API_RATE_LIMIT: '6000' } });
  const results = new Map(builds.map((b) => [b.name, []]));
  let last;
  for (let i = 0; i < runs; i++) {
    for (const build of builds) {
      const target = await freshTarget(`${build.name === 'baseline' ? 'b' : 'a'}${i}`);
      const run = await migrate(build, target);
      results.get(build.name).push(run);
      console.log(`${build.name}, run ${i + 1}: ${run.out.split('\n')[0]}`);
      console.log(`  ${describe(run)}`);
      console.log(`  ${requestFigures(run)}`);
      if (build.root === root) last = target;
    }
  }
  for (const [name, list] of results) if (list.length > 1) console.log(`${name}: ${spread(list)}`);
  const again = await migrate(builds[0], last);
  console.log(`second run into the same target: ${again.seconds.toFixed(1)} s, CPU ${again.cpu.toFixed(1)} s; ${again.out.split('\n')[0]}`);
  console.log(`  ${requestFigures(again)}`);
} finally {
  await server?.stop();
  for (const s of schemas) await adminQuery(`drop schema if exists ${s} cascade`).catch(() => {});
  if (!opts.keep) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work}`);
}

async function freshTarget(name) {
  const dataDir = path.join(work, `target-${name}`);
  fs.mkdirSync(dataDir, { recursive: true });
  if (!opts.pg) return { dataDir, databaseUrl: '' };
  const schema = `bench_migrate_${process.pid}_${name}`;
  await adminQuery(`create schema ${schema}`);
  schemas.push(schema);
  const u = new URL(PG_BASE);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return { dataDir, databaseUrl: u.toString() };
}

/** One `parley migrate` of the source into `target` by `build`, with a fresh login. */
async function migrate(build, target) {
  const login = await fetch(`${server.base}/v1.3/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: OWNER_LOGIN, pass: PASSWORD }),
  });
  const { accessToken, refreshToken } = await login.json();
  const args = ['migrate', '--from', server.base, '--token', accessToken.token, '--refresh-token', refreshToken.token];
  if (opts.rate) args.push('--rate', opts.rate);
  if (opts.concurrency) args.push('--concurrency', opts.concurrency);
  const sourceBefore = processUs(server.pid);
  const run = await runCli(build.root, target, args);
  run.sourceCpu = (processUs(server.pid) - sourceBefore) / 1e6;
  return run;
}

function describe(r) {
  return (
    `${r.seconds.toFixed(1)} s (target 300 s); migrating process CPU ${r.cpu.toFixed(1)} s = ${((1000 * r.cpu) / sizes.messages).toFixed(2)} s per 1k messages; ` +
    `source server CPU ${r.sourceCpu.toFixed(1)} s (${((100 * r.sourceCpu) / r.seconds).toFixed(0)}% of one core); peak RSS ${r.maxRssMb} MB`
  );
}

/**
 * The run's request count (the summary's `requests:` line), per lead and per 1k messages, and the
 * floor it sets: requests over the rate, the least wall time a run can take (docs/migrate.md).
 */
function requestFigures(r) {
  const line = r.out.split('\n').find((l) => l.startsWith('requests: ')) ?? 'requests: ?';
  const total = Number(/^requests: (\d+)/.exec(line)?.[1]);
  const rate = Number(opts.rate ?? 100);
  return (
    `${line}\n  = ${(total / sizes.leads).toFixed(3)} per lead, ${((1000 * total) / sizes.messages).toFixed(1)} per 1k messages; ` +
    `floor at ${rate}/s ${(total / rate).toFixed(1)} s, the run took ${(r.seconds / (total / rate)).toFixed(2)}x that`
  );
}

function spread(list) {
  const range = (xs) => `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)].toFixed(1);
  const wall = list.map((r) => r.seconds);
  const cpu = list.map((r) => r.cpu);
  return `wall median ${median(wall)} s (${range(wall)}); CPU median ${median(cpu)} s (${range(cpu)}) over ${list.length} runs`;
}

/**
 * Runs a build's CLI in a child process; it reports its own CPU time (user + system) and peak RSS
 * (Linux VmHWM) on stderr before it exits.
 */
function runCli(buildRoot, target, args) {
  const cli = new URL(`file://${path.join(buildRoot, 'dist', 'cli.js')}`).href;
  const script = `
    const { runCli } = await import(${JSON.stringify(cli)});
    const code = await runCli(${JSON.stringify(args)});
    const hwm = /VmHWM:\\s+(\\d+) kB/.exec((await import('node:fs')).readFileSync('/proc/self/status', 'utf8'));
    const cpu = process.cpuUsage();
    process.stderr.write('maxrss ' + (hwm ? hwm[1] : process.resourceUsage().maxRSS) + '\\ncpu ' + (cpu.user + cpu.system) + '\\n');
    process.exit(code);`;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: buildRoot,
      env: { ...process.env, PARLEY_DATA_DIR: target.dataDir, DATABASE_URL: target.databaseUrl, PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    // Progress lines (stderr) are kept for a failure's message only.
    child.stderr.on('data', (c) => (err += c));
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) return reject(new Error(`parley migrate failed: ${err}`));
      const kb = Number(/maxrss (\d+)/.exec(err)?.[1]);
      const cpu = Number(/cpu (\d+)/.exec(err)?.[1]) / 1e6;
      resolve({ seconds, cpu, out, maxRssMb: Math.round(kb / 1024) });
    });
  });
}

async function adminQuery(sql) {
  const { createRequire } = await import('node:module');
  const { pathToFileURL } = await import('node:url');
  const { default: pg } = await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('pg')).href);
  const client = new pg.Client({ connectionString: PG_BASE });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
