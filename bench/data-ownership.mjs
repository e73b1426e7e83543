// Export and import of the benchmark account (100k leads, 1M messages at --scale 1): wall time and
// peak RSS of each, each in a process of its own (`parley export` / `parley import`, as an operator
// runs them). The machine may be shared: figures vary with its load; say so when quoting them.
//
//   node bench/data-ownership.mjs [--scale 1 | --smoke] [--seed 1] [--keep]
//
// SQLite only (the import runs into a second, empty data folder). The data set is generated into a
// temporary folder (bench/generate.mjs) and removed afterwards unless --keep.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { cliChildScript } from './lib/processes.mjs';
import { progressReporter } from './lib/progress.mjs';

const { values: opts } = parseArgs({
  options: { scale: { type: 'string' }, smoke: { type: 'boolean' }, seed: { type: 'string' }, keep: { type: 'boolean' } },
});
ensureBuilt();
const { generate, sizesFor } = await import('./generate.mjs');
const sizes = sizesFor({ smoke: Boolean(opts.smoke), scale: Number(opts.scale ?? 1) });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bench-data-'));
const source = path.join(work, 'source');
const target = path.join(work, 'target');
const archive = path.join(work, 'account.tar.gz');

try {
  const bar = progressReporter('generating the data set');
  const meta = await generate({ dataDir: source, seed: Number(opts.seed ?? 1), sizes, progress: bar.update });
  bar.done();
  const { accountId } = meta;
  console.log(
    `data set: ${sizes.leads} leads, ${sizes.messages} messages (account ${accountId}); ${os.cpus().length} CPUs, Node ${process.version}`,
  );
  const exp = runCli(source, ['export', '--account', String(accountId), '--out', archive]);
  console.log(
    `export: ${exp.seconds.toFixed(1)} s, peak RSS ${exp.maxRssMb} MB, archive ${(fs.statSync(archive).size / 1e6).toFixed(1)} MB`,
  );
  const imp = runCli(target, ['import', archive]);
  console.log(`import: ${imp.seconds.toFixed(1)} s, peak RSS ${imp.maxRssMb} MB`);
  console.log(imp.out.split('\n')[0]);
  const limit = 300;
  for (const [name, r] of [
    ['export', exp],
    ['import', imp],
  ])
    if (r.maxRssMb >= limit) console.log(`WARNING: ${name} peak RSS ${r.maxRssMb} MB is not under ${limit} MB`);
} finally {
  if (!opts.keep) fs.rmSync(work, { recursive: true, force: true });
  else console.log(`kept ${work}`);
}

/** Runs the CLI in a child process; its peak RSS is the child's VmHWM (Linux). */
function runCli(dataDir, args) {
  const script = cliChildScript(args);
  const started = performance.now();
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, DATABASE_URL: '' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = (performance.now() - started) / 1000;
  if (child.status !== 0) throw new Error(`parley ${args[0]} failed: ${child.stderr}`);
  const kb = Number(/maxrss (\d+)/.exec(child.stderr)?.[1]);
  return { seconds, out: child.stdout, maxRssMb: Math.round(kb / 1024) };
}
