import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { runCli } from '../../src/cli.js';

/** `parley doctor --json`'s answer (docs/deploy.md, "Troubleshooting"). */
export interface Check {
  name: string;
  title: string;
  status: 'pass' | 'fail' | 'skip';
  detail: string;
  fix?: string;
}
export interface Report {
  ok: boolean;
  version: string;
  database: string;
  checks: Check[];
}

/** A certificate for 127.0.0.1 made with openssl, trusted by the doctor through NODE_EXTRA_CA_CERTS. */
export function makeCertificate(dir: string): { key: string; cert: string; file: string } {
  const key = path.join(dir, 'key.pem');
  const file = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'].concat([
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      file,
    ]),
    { stdio: 'ignore' },
  );
  return { key: fs.readFileSync(key, 'utf8'), cert: fs.readFileSync(file, 'utf8'), file };
}

export async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as net.AddressInfo).port;
}

/** Runs `parley doctor` in this process, as the CLI would, timing it. */
export async function doctor(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; out: string; err: string; ms: number }> {
  const out: string[] = [];
  const err: string[] = [];
  const sink = { log: (...a: unknown[]) => void out.push(a.join(' ')), error: (...a: unknown[]) => void err.push(a.join(' ')) };
  const started = performance.now();
  const code = await runCli(['doctor', ...args], env, sink as unknown as Console);
  return { code, out: out.join('\n'), err: err.join('\n'), ms: performance.now() - started };
}

export async function report(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; report: Report; out: string }> {
  const run = await doctor(env, '--json', ...args);
  return { code: run.code, report: JSON.parse(run.out) as Report, out: run.out };
}

export const check = (r: Report, name: string): Check => {
  const found = r.checks.find((c) => c.name === name);
  if (!found) throw new Error(`no check ${name} in ${r.checks.map((c) => c.name).join(', ')}`);
  return found;
};

/** Names, sizes and modification times of the data folder's files (SQLite's shared-memory file aside). */
export function snapshot(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !e.name.endsWith('-shm'))
    .map((e) => {
      const full = path.join(e.parentPath, e.name);
      const st = fs.statSync(full);
      return `${path.relative(dir, full)} ${st.size} ${st.mtimeMs}`;
    })
    .sort();
}
