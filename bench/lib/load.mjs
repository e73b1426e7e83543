// The load generator: autocannon (a devDependency) driving a stream of requests, with every
// response time kept so that any percentile (p95 too) is exact.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from '../../scripts/ensure-built.mjs';

let autocannon;
async function load() {
  if (autocannon) return autocannon;
  try {
    autocannon = (await import(pathToFileURL(createRequire(path.join(root, 'package.json')).resolve('autocannon')).href)).default;
  } catch {
    console.error('bench: autocannon is not installed (npm install)');
    process.exit(2);
  }
  return autocannon;
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Runs `next()` request after request (each `{ method, path, headers?, body? }`) against `base` on
 * `connections` connections for `duration` seconds. Returns requests/s of 2xx answers, latency
 * percentiles in ms, and errors (transport errors, timeouts and non-2xx answers).
 */
export async function runLoad({ base, next, duration, connections, pipelining = 1, overallRate }) {
  if (Array.isArray(base)) return runSpread({ bases: base, next, duration, connections, pipelining });
  const latencies = [];
  const r = await runOne({ base, next, duration, connections, pipelining, overallRate, latencies });
  latencies.sort((a, b) => a - b);
  return summary(r, latencies, duration);
}

/**
 * The same load spread over several server processes (`--processes N`): the connections are
 * shared out between them, each process gets its own autocannon instance, and the answers are
 * counted together (requests/s is the sum, percentiles over every answer).
 */
async function runSpread({ bases, next, duration, connections, pipelining }) {
  const latencies = [];
  const each = Math.max(1, Math.round(connections / bases.length));
  const parts = await Promise.all(bases.map((base) => runOne({ base, next, duration, connections: each, pipelining, latencies })));
  latencies.sort((a, b) => a - b);
  const merged = { ok: 0, bad: 0, firstBad: [], errors: 0, timeouts: 0, seconds: 0 };
  for (const p of parts) {
    merged.ok += p.ok;
    merged.bad += p.bad;
    merged.firstBad.push(...p.firstBad.slice(0, 3 - merged.firstBad.length));
    merged.errors += p.errors;
    merged.timeouts += p.timeouts;
    merged.seconds = Math.max(merged.seconds, p.seconds);
  }
  return summary(merged, latencies, duration);
}

function summary(r, latencies, duration) {
  const seconds = r.seconds || duration;
  return {
    requests: r.ok,
    rps: r.ok / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    errors: r.bad + r.errors + r.timeouts,
    errorDetail:
      r.bad || r.errors || r.timeouts ? { non2xx: r.bad, statusCodes: r.firstBad, transport: r.errors, timeouts: r.timeouts } : undefined,
  };
}

async function runOne({ base, next, duration, connections, pipelining = 1, overallRate, latencies }) {
  const ac = await load();
  let ok = 0;
  let bad = 0;
  const firstBad = [];
  const instance = ac({
    url: base,
    connections,
    pipelining,
    duration,
    timeout: 30,
    ...(overallRate ? { overallRate } : {}),
    requests: [
      {
        setupRequest: (req) => {
          const r = next();
          return {
            ...req,
            method: r.method,
            path: r.path,
            headers: { ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}), ...r.headers },
            body: r.body,
          };
        },
      },
    ],
  });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) {
      ok++;
      latencies.push(responseTime);
    } else {
      bad++;
      if (firstBad.length < 3) firstBad.push(statusCode);
    }
  });
  const result = await instance;
  return { ok, bad, firstBad, errors: result.errors, timeouts: result.timeouts, seconds: result.duration || duration };
}

/**
 * Requests at a steady rate, open loop (each one leaves at its time whether or not the earlier ones
 * were answered), for the latency phases. autocannon's overallRate is no steady rate: each
 * connection sends its share of a second as fast as it can when the second starts and then waits,
 * so the load came in bursts at about twice the rate for half of each second (measured), and a
 * "half capacity" phase ran at capacity half of the time. Same result shape as runLoad. `base` may
 * be several servers (`--processes N`): the requests go to each in turn.
 */
export async function runPaced({ base, next, duration, rate, connections = 64 }) {
  const http = await import('node:http');
  const bases = Array.isArray(base) ? base : [base];
  const targets = bases.map((b) => ({
    url: new URL(b),
    agent: new http.Agent({ keepAlive: true, maxSockets: Math.max(1, Math.ceil(connections / bases.length)) }),
  }));
  let turn = 0;
  const latencies = [];
  let ok = 0;
  let bad = 0;
  let transport = 0;
  const firstBad = [];
  const pending = new Set();
  const fire = () => {
    const r = next();
    const { url: target, agent } = targets[turn++ % targets.length];
    const sent = performance.now();
    const done = new Promise((resolve) => {
      const headers = { ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}), ...r.headers };
      const req = http.request({ host: target.hostname, port: target.port, path: r.path, method: r.method, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode >= 200 && res.statusCode < 300) {
            ok++;
            latencies.push(performance.now() - sent);
          } else {
            bad++;
            if (firstBad.length < 3) firstBad.push(res.statusCode);
          }
          resolve();
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        transport++;
        resolve();
      });
      req.end(r.body);
    });
    pending.add(done);
    done.then(() => pending.delete(done));
  };
  const total = Math.round(rate * duration);
  const start = performance.now();
  await new Promise((resolve) => {
    let sent = 0;
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
      while (sent < due) {
        sent++;
        fire();
      }
      if (sent < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  await Promise.all([...pending]);
  for (const t of targets) t.agent.destroy();
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: ok,
    rps: ok / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    errors: bad + transport,
    errorDetail: bad || transport ? { non2xx: bad, statusCodes: firstBad, transport } : undefined,
  };
}
