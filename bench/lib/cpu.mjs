// Where the machine's CPU went during a load run (Linux /proc; elsewhere nothing is reported):
// the servers' processes, every PostgreSQL process (backends and background processes alike),
// this process (the load generator, autocannon runs in it), and the time no one used. Divided by
// the answers of the run, it tells whether a run was bound by CPU (no idle time left) or by the
// latency of its steps (docs/performance.md), and what a request cost
// each side, which moves far less between runs than requests/s on a shared machine.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';

const LINUX = process.platform === 'linux' && fs.existsSync('/proc/stat');
let ticksPerSecond;

function clockTicks() {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** User and system CPU time of a process in µs (Linux /proc), or undefined when it is gone. */
export function processCpu(pid) {
  let stat;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The fields after the command name (which may hold spaces) in parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const us = (ticks) => (Number(ticks) * 1e6) / clockTicks();
  return { user: us(fields[11]), system: us(fields[12]) };
}

/** User + system CPU time of a process in µs, or undefined when it is gone. */
export function processUs(pid) {
  const cpu = processCpu(pid);
  return cpu && cpu.user + cpu.system;
}

/**
 * A backend's database from its command line (`postgres: 15/main: <user> <database> <host> <state>`),
 * undefined for the server's own processes (checkpointer, WAL writer, …).
 */
function backendDatabase(pid) {
  let cmdline;
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return undefined;
  }
  const m = /^postgres: (?:[^:]+: )?(\S+) (\S+) (?:\S+\(\d+\)|\[local\])/.exec(cmdline);
  return m ? m[2] : undefined;
}

/**
 * CPU time in µs of every process whose command is `postgres`, by pid. With `database`, the
 * backends of other databases (other suites on a shared machine) are left out; the server's own
 * processes count whatever their database.
 */
function postgresUs(database) {
  const out = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let comm;
    try {
      comm = fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm !== 'postgres') continue;
    if (typeof database === 'string') {
      const of = backendDatabase(entry);
      if (of !== undefined && of !== database) continue;
    }
    const us = processUs(entry);
    if (us !== undefined) out.set(entry, us);
  }
  return out;
}

/** The machine's idle and total ticks over every core (the first line of /proc/stat). */
function machineTicks() {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return { idle: cpu[3] + cpu[4], total };
}

/**
 * A snapshot before a run; `measure(answers)` after it returns the CPU per answer in µs of the
 * servers (`serverPids`), PostgreSQL (when `postgres`: true for every `postgres` process, or a
 * database's name for its backends and the server's own processes), and the load generator, and
 * the share of the machine's time left idle; undefined off Linux.
 */
export function cpuWatch({ serverPids, postgres }) {
  if (!LINUX) return { measure: () => undefined };
  const servers = serverPids.map((pid) => processUs(pid) ?? 0);
  const pg = postgres ? postgresUs(postgres) : new Map();
  const load = process.cpuUsage();
  const machine = machineTicks();
  return {
    measure(answers) {
      if (!answers) return undefined;
      const perAnswer = (us) => Math.round(us / answers);
      const serverUs = serverPids.reduce((sum, pid, i) => sum + Math.max(0, (processUs(pid) ?? servers[i]) - servers[i]), 0);
      let postgresUsed = 0;
      if (postgres) {
        // A backend that started during the run counts whole; one that ended is lost (a few ticks).
        for (const [pid, us] of postgresUs(postgres)) postgresUsed += us - (pg.get(pid) ?? 0);
      }
      const usage = process.cpuUsage(load);
      const after = machineTicks();
      const total = after.total - machine.total;
      return {
        serverUs: perAnswer(serverUs),
        ...(postgres ? { postgresUs: perAnswer(postgresUsed) } : {}),
        loadUs: perAnswer(usage.user + usage.system),
        idle: total > 0 ? Math.round((1000 * (after.idle - machine.idle)) / total) / 1000 : undefined,
      };
    },
  };
}

/** "CPU per request: server 157 µs, PostgreSQL 178 µs, load generator 37 µs; machine 32% idle" */
export function describeCpu(cpu) {
  const parts = [`server ${cpu.serverUs} µs`];
  if (cpu.postgresUs !== undefined) parts.push(`PostgreSQL ${cpu.postgresUs} µs`);
  parts.push(`load generator ${cpu.loadUs} µs`);
  return `CPU per request: ${parts.join(', ')}; machine ${Math.round((cpu.idle ?? 0) * 100)}% idle`;
}
