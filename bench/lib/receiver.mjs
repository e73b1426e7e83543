// Local webhook receivers for the fan-out scenario (the same idea as test/helpers/webhook-receiver.ts,
// in a process of its own so the load generator does not delay its clock): one HTTP server per
// endpoint (own port: endpoints of different hosts, as in production, each with its own connection
// pool in the sender), answering 200 at once and noting each delivery's `webhook-id` (msg_<event id>)
// with its arrival time. On the first port: GET /__stats, /__dump, /__reset. With `stamps` as the
// second argument, each arrival also keeps the send instant a load generator wrote into the
// message text (`t<Unix ms>`: bench/webhook-beside-ingest.mjs).
import http from 'node:http';

const COUNT = Number(process.argv[2] ?? 5);
const STAMPS = process.argv[3] === 'stamps';
let arrivals = [];
const handler = (req, res) => {
  if (req.url === '/__stats') return void res.end(JSON.stringify({ count: arrivals.length }));
  if (req.url === '/__dump') return void res.end(JSON.stringify(arrivals));
  if (req.url === '/__reset') {
    arrivals = [];
    return void res.end('{}');
  }
  const chunks = [];
  req.on('data', (c) => STAMPS && chunks.push(c));
  req.on('end', () => {
    const at = Date.now();
    const stamp = STAMPS ? /"text":"t(\d+)"/.exec(Buffer.concat(chunks).toString())?.[1] : undefined;
    arrivals.push(stamp ? [String(req.headers['webhook-id'] ?? ''), at, Number(stamp)] : [String(req.headers['webhook-id'] ?? ''), at]);
    res.end('ok');
  });
};
// HELPER_PORTS (bench/lib/processes.mjs startHelper): the ports to listen on, one per endpoint
// (ports of BENCH_PORTS when that is set); any free port for those not given.
const ports = (process.env.HELPER_PORTS ?? '').split(',').map(Number);
const urls = [];
for (let i = 0; i < COUNT; i++) {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(ports[i] || 0, '127.0.0.1', resolve));
  urls.push(`http://127.0.0.1:${server.address().port}`);
}
process.stdout.write(`endpoints ${urls.join(' ')}\nserving ${urls[0]}\n`);
