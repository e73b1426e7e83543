// Start-up time and idle memory, now scenarios of the suite: `startup` (spawn -> first 200 of
// GET /health, on the data set and on an empty data folder) and `footprint` (RSS after start and
// after the load). Options are the suite's (bench/run.mjs), e.g. --smoke.
import { spawnSync } from 'node:child_process';
const run = new URL('./run.mjs', import.meta.url).pathname;
const { status } = spawnSync(process.execPath, [run, 'startup', 'footprint', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(status ?? 1);
