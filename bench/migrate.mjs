// `parley migrate` from a second Parley (a server process on its own data folder, speaking the API)
// into an empty installation: wall time, the source server's CPU while it was read, the migrating
// process's peak RSS. Target: the source's 10k leads / 100k messages (--scale 0.1) in under 5
// minutes with both on this machine, the source's CPU kept modest by the default rate. The machine
// may be shared: figures vary with its load; say so when quoting them.
//
//   node bench/migrate.mjs [--scale 0.1 | --smoke] [--seed 1] [--rate 10] [--concurrency 4] [--keep]
//
// SQLite on both sides. The data set is generated into a temporary folder (bench/generate.mjs).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { processUs } from './lib/cpu.mjs';
import { cliChildScript, startServer } from './lib/processes.mjs';
import { progressReporter } from './lib/progress.mjs';

const { values: opts } = parseArgs({
  options: {
    scale: { type: 'string' },
    smoke: { type: 'boolean' },
    seed: { type: 'string' },
    rate: { type: 'string' },
    concurrency: { type: 'string' },
    keep: { type: 'boolean' },
  },
});
ensureBuilt();
const { generate, sizesFor, OWNER_LOGIN, PASSWORD } = await import('./generate.mjs');
const sizes = sizesFor({ smoke: Boolean(opts.smoke), scale: Number(opts.scale ?? 0.1) });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-migrate-'));
const sourceDir = path.join(work, 'source');
const targetDir = path.join(work, 'target');
let server;

try {
  const bar = progressReporter('generating the data set');
  await generate({ dataDir: sourceDir, seed: Number(opts.seed ?? 1), sizes, progress: bar.update });
  bar.done();
  console.log(`data set: ${sizes.leads} leads, ${sizes.messages} messages; ${os.cpus().length} CPUs, Node ${process.version}`);
  server = await startServer({ dataDir: sourceDir });
  const login = await fetch(`${server.base}/v1.3/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: OWNER_LOGIN, pass: PASSWORD }),
  });
  const { accessToken, refreshToken } = await login.json();
  const args = ['migrate', '--from', server.base, '--token', accessToken.token, '--refresh-token', refreshToken.token];
  if (opts.rate) args.push('--rate', opts.rate);
  if (opts.concurrency) args.push('--concurrency', opts.concurrency);
  const cpuBefore = processUs(server.pid);
  const run = await runCli(targetDir, args);
  const sourceCpu = (processUs(server.pid) - cpuBefore) / 1e6;
  console.log(run.out.split('\n').slice(0, 3).join('\n'));
  console.log(
    `migrate: ${run.seconds.toFixed(1)} s (target 300 s), peak RSS ${run.maxRssMb} MB; source server CPU ${sourceCpu.toFixed(1)} s ` +
      `(${((100 * sourceCpu) / run.seconds).toFixed(0)}% of one core on average)`,
  );
  const again = await runCli(targetDir, args);
  console.log(`second run: ${again.seconds.toFixed(1)} s; ${again.out.split('\n')[0]}`);
} finally {
  await server?.stop();
  if (!opts.keep) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work}`);
}

/** Runs the CLI in a child process; its peak RSS is the child's VmHWM (Linux). */
function runCli(dataDir, args) {
  const script = cliChildScript(args);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, DATABASE_URL: '', PARLEY_WEBHOOK_ALLOW_PRIVATE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    // Progress lines go to stderr: shown as they come.
    child.stderr.on('data', (c) => {
      err += c;
      if (!String(c).startsWith('maxrss')) process.stderr.write(c);
    });
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000;
      if (code !== 0) return reject(new Error(`parley migrate failed: ${err}`));
      const kb = Number(/maxrss (\d+)/.exec(err)?.[1]);
      resolve({ seconds, out, maxRssMb: Math.round(kb / 1024) });
    });
  });
}
