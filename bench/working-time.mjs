// CPU of counting time in working hours (src/domain/automation/working-time.ts): what
// `GET /v1.3/leads/statistics?responseTimeIn=working` adds per answered lead, and what the overdue
// filter and sweep add per account. Pure computation, no server: process CPU per call.
//
//   node bench/working-time.mjs           20,000 waits of 0-3 days in New York office hours
//   node bench/working-time.mjs --smoke   2,000 (figures not judged)
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';

ensureBuilt();
const { workingMsBetween, workingCutoff } = await import(pathToFileURL(path.join(root, 'dist/domain/automation/working-time.js')).href);

const N = process.argv.includes('--smoke') ? 2_000 : 20_000;
const day = ['09:00', '18:00'];
const hours = {
  timezone: 'America/New_York',
  week: { mon: [day], tue: [day], wed: [day], thu: [day], fri: [day] },
  holidays: ['2026-11-26'],
};
let seed = 1;
const random = () => {
  seed = (seed * 48_271) % 2_147_483_647;
  return seed / 2_147_483_647;
};
const waits = Array.from({ length: N }, () => {
  const from = Date.UTC(2026, 0, 1) + random() * 300 * 86_400_000;
  return [from, from + random() * 3 * 86_400_000];
});
const cpu = (fn) => {
  const before = process.cpuUsage();
  fn();
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

const measured = cpu(() => {
  for (const [from, to] of waits) workingMsBetween(hours, from, to);
});
const cutoffs = cpu(() => {
  for (const [, to] of waits.slice(0, 1_000)) workingCutoff(hours, to, 30 * 60_000);
});
console.log(`workingMsBetween: ${(measured / N).toFixed(1)} us CPU per lead (${N} waits of 0-3 days)`);
console.log(`workingCutoff:    ${(cutoffs / Math.min(N, 1_000)).toFixed(1)} us CPU per call (30-minute target)`);
