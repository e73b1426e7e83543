import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The real server process, as `npm start` runs it: dist/main.js, configured by the environment only. */
export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const START_TIMEOUT = 20_000;
const EXIT_TIMEOUT = 10_000;

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** Every stdout line so far (pino JSON), parsed where it parses. */
  lines: Array<{ msg?: string; raw: string }>;
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Builds dist/ when the sources are newer (scripts/ensure-built.mjs). */
export async function ensureBuilt(): Promise<void> {
  const mod = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  mod.ensureBuilt();
}

export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Starts a server on a free port with only `settings` (no inherited database, secret or listen
 * address) and resolves once it logged "serving <url>". `script`: another copy of the built server.
 */
export async function startServerProcess(
  settings: Record<string, string>,
  script = path.join(root, 'dist', 'main.js'),
): Promise<ServerProcess> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
  Object.assign(env, { PORT: '0', HOST: '127.0.0.1', PARLEY_SIGNUP: 'open', PARLEY_LOG_LEVEL: 'info' }, settings);

  const child = spawn(process.execPath, [script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: ServerProcess['lines'] = [];
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal })),
  );
  const server: ServerProcess = { child, base: '', lines, stderr, exited };

  const serving = new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (raw) => {
      let msg: string | undefined;
      try {
        msg = (JSON.parse(raw) as { msg?: string }).msg;
      } catch {
        msg = undefined;
      }
      lines.push({ msg, raw });
      const match = msg && /serving (http:\/\/[^\s]+)/.exec(msg);
      if (match) resolve(match[1]);
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`server exited (${code ?? signal}) before serving:\n${lines.map((l) => l.raw).join('\n')}\n${stderr.join('')}`)),
    );
  });
  try {
    server.base = await withTimeout(serving, START_TIMEOUT, 'the "serving" log line');
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return server;
}

export async function stopServerProcess(server: ServerProcess, signal: NodeJS.Signals = 'SIGTERM') {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.exited;
  server.child.kill(signal);
  return withTimeout(server.exited, EXIT_TIMEOUT, `exit after ${signal}`);
}

/** One JSON request to a server process. */
export async function call(
  base: string,
  method: string,
  url: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(base + url, {
    method,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...opts.headers,
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
  });
  const text = await res.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: res.status, body, headers: res.headers };
}
