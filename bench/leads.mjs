// Lead lists under load, now scenarios of the suite: `leads` (GET /v1.3/leads/active?limit=50)
// and `leads-filtered` (the same with an integration and a tag filter), each against the ceiling.
// Targets: ratio >= 0.6, p99 < 25 ms. Options are the suite's (bench/run.mjs), e.g. --smoke, --runs 3.
import { spawnSync } from 'node:child_process';
const run = new URL('./run.mjs', import.meta.url).pathname;
const { status } = spawnSync(process.execPath, [run, 'leads', 'leads-filtered', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(status ?? 1);
