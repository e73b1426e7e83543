// Where the machine's CPU went during a load run (Linux /proc; elsewhere nothing is reported):
// the servers' processes, every PostgreSQL process (backends and background processes alike),
// this process (the load generator, autocannon runs in it), and the time no one used. Divided by
// the answers of the run, it tells whether a run was bound by CPU (no idle time left) or by the
// latency of its steps (docs/performance.md, "issue 19 sixteenth pass"), and what a request cost
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

/** User + system ticks of one process, or undefined when it is gone. */
function processTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) in parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** Ticks of every process whose command is `postgres`, by pid. */
function postgresTicks() {
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
    const ticks = processTicks(entry);
    if (ticks !== undefined) out.set(entry, ticks);
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
 * servers (`serverPids`), PostgreSQL (when `postgres`), and the load generator, and the share of
 * the machine's time left idle; undefined off Linux.
 */
export function cpuWatch({ serverPids, postgres }) {
  if (!LINUX) return { measure: () => undefined };
  const servers = serverPids.map((pid) => processTicks(pid) ?? 0);
  const pg = postgres ? postgresTicks() : new Map();
  const load = process.cpuUsage();
  const machine = machineTicks();
  return {
    measure(answers) {
      if (!answers) return undefined;
      const hz = clockTicks();
      const perAnswer = (ticks) => Math.round(((ticks / hz) * 1e6) / answers);
      const serverTicks = serverPids.reduce((sum, pid, i) => sum + Math.max(0, (processTicks(pid) ?? servers[i]) - servers[i]), 0);
      let postgresTicksUsed = 0;
      if (postgres) {
        // A backend that started during the run counts whole; one that ended is lost (a few ticks).
        for (const [pid, ticks] of postgresTicks()) postgresTicksUsed += ticks - (pg.get(pid) ?? 0);
      }
      const usage = process.cpuUsage(load);
      const after = machineTicks();
      const total = after.total - machine.total;
      return {
        serverUs: perAnswer(serverTicks),
        ...(postgres ? { postgresUs: perAnswer(postgresTicksUsed) } : {}),
        loadUs: Math.round((usage.user + usage.system) / answers),
        idle: total > 0 ? Math.round((1000 * (after.idle - machine.idle)) / total) / 1000 : undefined,
      };
    },
  };
}

/** "server 157 µs, PostgreSQL 178 µs, load 37 µs per answer; 32% idle" */
export function describeCpu(cpu, unit = 'answer') {
  if (!cpu) return '';
  const parts = [`server ${cpu.serverUs} µs`];
  if (cpu.postgresUs !== undefined) parts.push(`PostgreSQL ${cpu.postgresUs} µs`);
  parts.push(`load generator ${cpu.loadUs} µs`);
  return `CPU per ${unit}: ${parts.join(', ')}; machine ${Math.round((cpu.idle ?? 0) * 100)}% idle`;
}
