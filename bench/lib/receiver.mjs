// Local webhook receivers for the fan-out scenario (the same idea as test/helpers/webhook-receiver.ts,
// in a process of its own so the load generator does not delay its clock): one HTTP server per
// endpoint (own port: endpoints of different hosts, as in production, each with its own connection
// pool in the sender), answering 200 at once and noting each delivery's `webhook-id` (msg_<event id>)
// with its arrival time. On the first port: GET /__stats, /__dump, /__reset.
import http from 'node:http';

const COUNT = Number(process.argv[2] ?? 5);
let arrivals = [];
const handler = (req, res) => {
  if (req.url === '/__stats') return void res.end(JSON.stringify({ count: arrivals.length }));
  if (req.url === '/__dump') return void res.end(JSON.stringify(arrivals));
  if (req.url === '/__reset') {
    arrivals = [];
    return void res.end('{}');
  }
  req.on('data', () => {});
  req.on('end', () => {
    arrivals.push([String(req.headers['webhook-id'] ?? ''), Date.now()]);
    res.end('ok');
  });
};
const urls = [];
for (let i = 0; i < COUNT; i++) {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  urls.push(`http://127.0.0.1:${server.address().port}`);
}
process.stdout.write(`endpoints ${urls.join(' ')}\nserving ${urls[0]}\n`);
