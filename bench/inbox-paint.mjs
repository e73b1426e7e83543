// The agent app's inbox with a large account, in Debian's chromium: time to the first
// painted lead row after opening /inbox, and scrolling the `All` list down to its 10,000th lead
// (pages of 50 loaded as the list nears its end) with the frames it took. Figures are printed,
// never judged: the machine is shared and the browser runs beside the server.
//
//   node bench/inbox-paint.mjs                 100k leads (generated once into bench/.data/paint-*)
//   node bench/inbox-paint.mjs --scale 0.1     10k leads;  --smoke: 1000 leads (scrolls to the end)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { generate, OWNER_LOGIN, PASSWORD, sizesFor } from './generate.mjs';
import { startServer } from './lib/processes.mjs';

const { values: opts } = parseArgs({
  options: {
    scale: { type: 'string', default: '1' },
    smoke: { type: 'boolean', default: false },
    target: { type: 'string', default: '10000' },
  },
});
const sizes = sizesFor({ smoke: opts.smoke, scale: Number(opts.scale) });
ensureBuilt();
const dataDir = path.join(root, 'bench', '.data', `paint-${sizes.leads}`);
if (!fs.existsSync(path.join(dataDir, '.complete'))) {
  fs.rmSync(dataDir, { recursive: true, force: true });
  const t0 = performance.now();
  await generate({
    dataDir,
    sizes,
    progress: (phase, done, total) => process.stdout.write(`\rgenerating ${phase}: ${done} / ${total}   `),
  });
  fs.writeFileSync(path.join(dataDir, '.complete'), '');
  console.log(`\ngenerated ${sizes.leads} leads in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

const server = await startServer({ dataDir });
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-paint-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  viewport: { width: 1280, height: 800 },
});
try {
  const page = await context.newPage();
  // Sign in once; the measured visits find the session in localStorage like a returning employee.
  await page.goto(`${server.base}/login`);
  await page.fill('input[name=login]', OWNER_LOGIN);
  await page.fill('input[name=pass]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/inbox$/);

  const paints = [];
  for (let i = 0; i < 3; i++) {
    await page.goto(`${server.base}/inbox?list=all`);
    await page.waitForSelector('.lead-row');
    paints.push(
      await page.evaluate(() => {
        const fcp = performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null;
        return new Promise((resolve) => requestAnimationFrame(() => resolve({ firstRow: performance.now(), fcp })));
      }),
    );
  }
  const total = Number(await page.locator('.tab[data-list=all] .count').textContent());
  const target = Math.min(Number(opts.target), total);
  // Scroll like a reader flicking down: a screenful per frame, loading pages as it goes.
  const scroll = await page.evaluate(async (target) => {
    const list = document.querySelector('.inbox-list .vlist');
    const frames = [];
    let last = performance.now();
    const t0 = last;
    for (;;) {
      const row = document.querySelectorAll('.inbox-list [role=option]');
      const ids = [...row].map((r) => Number(r.style.top.replace('px', '')) / 76);
      if (Math.max(...ids) >= target - 1) break;
      if (performance.now() - t0 > 600_000) return { timedOut: true };
      list.scrollTop = list.scrollHeight;
      await new Promise((r) => requestAnimationFrame(r));
      const now = performance.now();
      frames.push(now - last);
      last = now;
    }
    frames.sort((a, b) => a - b);
    const pick = (q) => frames[Math.min(frames.length - 1, Math.floor(q * frames.length))];
    return {
      ms: performance.now() - t0,
      frames: frames.length,
      p50: pick(0.5),
      p95: pick(0.95),
      max: frames[frames.length - 1],
      long: frames.filter((f) => f > 50).length,
      domRows: document.querySelectorAll('.inbox-list [role=option]').length,
    };
  }, target);
  const firstRows = paints.map((p) => Math.round(p.firstRow));
  console.log(
    `inbox first paint (${sizes.leads} leads, All list of ${total}): first lead row at ${firstRows.join(' / ')} ms after navigation (FCP ${paints.map((p) => Math.round(p.fcp ?? -1)).join(' / ')} ms); target < 1000 ms`,
  );
  console.log(
    scroll.timedOut
      ? 'scroll: timed out'
      : `scroll to lead ${target}: ${(scroll.ms / 1000).toFixed(1)} s over ${scroll.frames} frames (${target / 50} pages); frame p50 ${scroll.p50.toFixed(0)} ms, p95 ${scroll.p95.toFixed(0)} ms, max ${scroll.max.toFixed(0)} ms, ${scroll.long} frames > 50 ms; ${scroll.domRows} rows in the DOM at the end`,
  );
  console.log(
    `load average during the run: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} (${os.cpus().length} cores, shared)`,
  );
} finally {
  await context.close();
  fs.rmSync(profile, { recursive: true, force: true });
  await server.stop();
}
