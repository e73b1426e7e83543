// Summarizes a V8 .cpuprofile (from `npm run bench -- <scenario> --cpu-prof`, or node --cpu-prof):
// self time by function and by package/file, top N. Usage: node bench/profile-summary.mjs <file> [N]
import fs from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.mjs <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const deltas = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const byFunction = new Map();
const byArea = new Map();
for (const [id, us] of self) {
  const { callFrame: f } = byId.get(id);
  const where = f.url
    .replace(/^file:\/\//, '')
    .replace(/.*node_modules\//, 'npm:')
    .replace(/.*\/dist\//, 'dist/');
  const key = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  const area = where.startsWith('npm:')
    ? where
        .split('/')
        .slice(0, where.startsWith('npm:@') ? 2 : 1)
        .join('/')
    : where || f.functionName;
  byArea.set(area, (byArea.get(area) ?? 0) + us);
}
const print = (title, map) => {
  console.log(`\n${title}`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time by package / file', byArea);
print('self time by function', byFunction);
