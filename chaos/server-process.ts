import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The real server process (dist/main.js), configured by the environment only, as `npm start` runs it. */
export class ServerProcess {
  base = '';
  private child: ChildProcess | undefined;

  constructor(private readonly env: Record<string, string>) {}

  async start(): Promise<string> {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const key of Object.keys(env)) if (key.startsWith('PARLEY_') || key === 'DATABASE_URL') delete env[key];
    Object.assign(env, { PORT: '0', HOST: '127.0.0.1', PARLEY_LOG_LEVEL: 'info' }, this.env);
    const child = spawn(process.execPath, [path.join(root, 'dist', 'main.js')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const output: string[] = [];
    child.stderr!.setEncoding('utf8').on('data', (c: string) => output.push(c));
    this.base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`server did not start:\n${output.join('')}`)), 30_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        output.push(line);
        const match = /serving (http:\/\/[^\s"]+)/.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.once('exit', (code, signal) => reject(new Error(`server exited (${code ?? signal}):\n${output.join('\n')}`)));
    });
    return this.base;
  }

  /** SIGKILL: no shutdown, no flush; whatever was committed is all there is. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

export interface Arrival {
  webhookId: string;
  leadId: number;
  text: string;
}

/**
 * A webhook receiver that verifies Standard Webhooks signatures and can be taken down, made to
 * answer 500, and brought up again on the same port.
 */
export class ChaosReceiver {
  readonly arrivals: Arrival[] = [];
  invalidSignatures = 0;
  failures = 0;
  mode: 'up' | 'fail' = 'up';
  port = 0;
  private server: http.Server | undefined;
  private verifier: Webhook | undefined;

  set secret(secret: string) {
    this.verifier = new Webhook(secret);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        if (this.mode === 'fail') {
          this.failures++;
          res.statusCode = 500;
          return void res.end('failing on purpose');
        }
        try {
          this.verifier!.verify(body, req.headers as Record<string, string>);
        } catch {
          this.invalidSignatures++;
        }
        const event = JSON.parse(body) as { type: string; leadId?: number; message?: { message?: { text?: string } } };
        if (event.type === 'message.incoming') {
          this.arrivals.push({
            webhookId: String(req.headers['webhook-id']),
            leadId: event.leadId ?? 0,
            text: event.message?.message?.text ?? '',
          });
        }
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  /** Refuses connections from now on (the port is closed). */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
