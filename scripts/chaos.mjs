// `npm run chaos`: the standing reliability suite (chaos/*.chaos.ts) on the database it is given
// (DATABASE_URL names PostgreSQL; otherwise embedded SQLite), then its figures for docs/reliability.md.
//
//   npm run chaos                 short mode (CI): a seeded sample of ~3,000 fuzz cases, one SIGKILL
//   npm run chaos -- --full       every fuzz case and tenancy probe, three SIGKILLs
//   npm run chaos -- --seed 7     another sample (CHAOS_SEED); a failure names its case
//   npm run chaos -- fuzz         only the suites whose file names contain these words
// Exit code: vitest's (non-zero when any suite failed).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { root } from './ensure-built.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { full: { type: 'boolean', default: false }, seed: { type: 'string' } },
});
const figuresFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'parley-chaos-figures-')), 'figures.jsonl');
const env = {
  ...process.env,
  CHAOS_MODE: values.full ? 'full' : 'short',
  CHAOS_FIGURES_FILE: figuresFile,
  ...(values.seed ? { CHAOS_SEED: values.seed } : {}),
};
const started = Date.now();
const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const run = spawnSync(process.execPath, [vitest, 'run', '--config', 'chaos/vitest.config.ts', ...positionals], {
  cwd: root,
  env,
  stdio: 'inherit',
});

const dialect = /^postgres(ql)?:/.test(process.env.DATABASE_URL ?? '') ? 'PostgreSQL' : 'SQLite';
const figures = fs.existsSync(figuresFile)
  ? fs
      .readFileSync(figuresFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
  : [];
console.log(
  `\nchaos figures (${env.CHAOS_MODE} mode, ${dialect}, seed ${env.CHAOS_SEED ?? 1}, ${Math.round((Date.now() - started) / 1000)} s):`,
);
for (const f of figures) console.log(`  ${f.suite.padEnd(8)} ${String(f.name).padEnd(26)} ${f.value}`);
fs.rmSync(path.dirname(figuresFile), { recursive: true, force: true });
process.exit(run.status ?? 1);
