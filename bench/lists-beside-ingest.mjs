// Lead lists beside ingest: one account's inbox list read under load while
// widget visitors write at a steady pace, to another account or to the same one. The lead read
// cache should keep the first close to the quiet figure (its answers depend on their account only)
// and only the second should fall. Prints requests/s of the list for each case. Not a test.
//
//   node bench/lists-beside-ingest.mjs [--db postgres] [--duration 10] [--rate 25] [--connections 20] [--no-build]
//   (PostgreSQL: BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test; a fresh schema)
import { parseArgs } from 'node:util';
import { ensureBuilt } from '../scripts/ensure-built.mjs';
import { runLoad, runPaced } from './lib/load.mjs';
import { scratchServer } from './lib/scratch-server.mjs';

const { values: opts } = parseArgs({
  options: {
    db: { type: 'string', default: 'sqlite' },
    duration: { type: 'string', default: '10' },
    rate: { type: 'string', default: '25' },
    connections: { type: 'string', default: '20' },
    'no-build': { type: 'boolean', default: false },
  },
});
const DURATION = Number(opts.duration);
const RATE = Number(opts.rate);
if (!opts['no-build']) ensureBuilt();

const { server, json, drop } = await scratchServer({ db: opts.db, name: 'lists' });

let seq = 0;
/** An account with a widget and `visitors` visitors who each wrote once: their tokens. */
async function account(visitors) {
  const owner = await json('POST', '/v1.3/auth/register', {
    body: { login: `lists-${process.pid}-${++seq}@example.com`, pass: 'lists beside ingest', name: `Shop ${seq}` },
  });
  const token = owner.accessToken.token;
  const widget = await json('POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  const tokens = [];
  for (let i = 0; i < visitors; i++) {
    const session = await json('POST', '/widget/v1/sessions', { body: { key: widget.widget.key } });
    await json('POST', '/widget/v1/messages', { token: session.token, body: { clientId: `c${++seq}`, text: 'hello' } });
    tokens.push(session.token);
  }
  return { token, visitors: tokens };
}

try {
  const reader = await account(60);
  const other = await account(20);
  const list = () => ({ method: 'GET', path: '/v1.3/leads/inbox?limit=50', headers: { authorization: `Bearer ${reader.token}` } });
  const connections = Number(opts.connections);
  const read = () => runLoad({ base: server.base, next: list, duration: DURATION, connections });
  const writes = (visitors) => {
    let i = 0;
    return () => {
      const token = visitors[i++ % visitors.length];
      return {
        method: 'POST',
        path: '/widget/v1/messages',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ clientId: `w${++seq}`, text: 'more' }),
      };
    };
  };
  await read(); // warm-up
  const quiet = await read();
  const besideOther = await Promise.all([
    read(),
    runPaced({ base: server.base, next: writes(other.visitors), duration: DURATION, rate: RATE, connections: 4 }),
  ]);
  const besideSame = await Promise.all([
    read(),
    runPaced({ base: server.base, next: writes(reader.visitors), duration: DURATION, rate: RATE, connections: 4 }),
  ]);
  const line = (name, r, w) =>
    console.log(
      `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(6)} req/s  p99 ${r.p99.toFixed(1)} ms${w ? `  (writes ${w.rps.toFixed(1)}/s, errors ${w.errors})` : ''}`,
    );
  console.log(`lead list (inbox, 50 of 60 leads), ${opts.db}, ${connections} connections, ${DURATION} s; writes ${RATE}/s`);
  line('quiet', quiet);
  line('beside writes to another account', ...besideOther);
  line('beside writes to the same account', ...besideSame);
} finally {
  await drop();
}
