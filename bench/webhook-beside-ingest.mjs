// One webhook endpoint beside steady ingest: widget visitors write at a fixed rate (default 500
// messages/s for 20 s) to one account whose one webhook (message.incoming) points at
// bench/lib/receiver.mjs (its own process). Prints the ingest rate reached, the message -> webhook
// delay (from the visitor's send, stamped in the text, to the receiver's arrival: p50/p99), the
// backlog when the load stops and how long it took to drain, and the CPU per message (ingest and its
// delivery) of the server and of PostgreSQL. Targets: p99 < 500 ms, no backlog.
// Not a test: on a machine shared with other work the figures move with the load.
//
//   node bench/webhook-beside-ingest.mjs [--db postgres] [--rate 500] [--duration 20] [--visitors 200] [--no-build]
//   (PostgreSQL: BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test; a fresh schema)
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureBuilt, root } from '../scripts/ensure-built.mjs';
import { cpuWatch, describeCpu } from './lib/cpu.mjs';
import { percentile, runPaced } from './lib/load.mjs';
import { startHelper } from './lib/processes.mjs';
import { scratchServer } from './lib/scratch-server.mjs';

const { values: opts } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    rate: { type: 'string', default: '500' },
    duration: { type: 'string', default: '20' },
    visitors: { type: 'string', default: '200' },
    'no-build': { type: 'boolean', default: false },
  },
});
const RATE = Number(opts.rate);
const DURATION = Number(opts.duration);
if (!opts['no-build']) ensureBuilt();

const receiver = await startHelper(path.join(root, 'bench', 'lib', 'receiver.mjs'), ['1', 'stamps']);
const { server, json, drop } = await scratchServer({
  db: opts.db,
  name: 'hook-ingest',
  extraEnv: {
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    PARLEY_WIDGET_MESSAGES_PER_MINUTE: '100000',
    PARLEY_WIDGET_SESSIONS_PER_IP: '100000',
    ...(process.env.PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY
      ? { PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY: process.env.PARLEY_WEBHOOK_ENDPOINT_CONCURRENCY }
      : {}),
  },
});
const stats = async () => (await (await fetch(`${receiver.url}/__stats`)).json()).count;

try {
  const owner = await json('POST', '/v1.3/auth/register', {
    body: { login: `hook-${process.pid}@example.com`, pass: 'webhook beside ingest', name: 'Shop' },
  });
  const token = owner.accessToken.token;
  const widget = await json('POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  const visitors = [];
  for (let i = 0; i < Number(opts.visitors); i++) {
    visitors.push((await json('POST', '/widget/v1/sessions', { body: { key: widget.widget.key } })).token);
  }
  await json('POST', '/v1.3/webhooks', { token, body: { url: receiver.endpoints[0], events: ['message.incoming'] } });
  await fetch(`${receiver.url}/__reset`);
  let i = 0;
  const next = () => ({
    method: 'POST',
    path: '/widget/v1/messages',
    headers: { authorization: `Bearer ${visitors[i++ % visitors.length]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: `m${i}`, text: `t${Date.now()}` }),
  });
  const watch = cpuWatch({ serverPids: [server.pid], postgres: opts.db === 'postgres' });
  const ingest = await runPaced({ base: server.base, next, duration: DURATION, rate: RATE, connections: 64 });
  const stoppedAt = Date.now();
  const backlog = ingest.requests - (await stats());
  while ((await stats()) < ingest.requests && Date.now() - stoppedAt < 120_000) await new Promise((r) => setTimeout(r, 50));
  const drainedMs = Date.now() - stoppedAt;
  const cpu = watch.measure(ingest.requests);
  const arrivals = await (await fetch(`${receiver.url}/__dump`)).json();
  const delays = arrivals
    .filter((a) => a[2] !== undefined)
    .map((a) => a[1] - a[2])
    .sort((a, b) => a - b);
  console.log(`one endpoint beside ingest, ${opts.db}: ${RATE}/s for ${DURATION} s, ${opts.visitors} visitors`);
  console.log(
    `  ingest: ${ingest.requests} messages, ${ingest.rps.toFixed(0)}/s, p99 ${ingest.p99.toFixed(0)} ms, errors ${ingest.errors}`,
  );
  console.log(
    `  message -> webhook: p50 ${percentile(delays, 50).toFixed(0)} ms, p99 ${percentile(delays, 99).toFixed(0)} ms (target < 500)`,
  );
  console.log(`  backlog when the load stopped: ${backlog}; all ${arrivals.length} delivered ${drainedMs} ms after it`);
  if (cpu) console.log(`  ${describeCpu(cpu).replace('per request', 'per message')}`);
} finally {
  await drop();
  await receiver.stop();
}
