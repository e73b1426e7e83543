import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { call, ensureBuilt, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * Two real server processes on one PostgreSQL database (a schema of its own), each with its own
 * data folder: what they agree on, they agree on through the database. Shared secrets as an
 * operator sets them for several machines (docs/operations.md).
 */
export interface Cluster {
  a: string;
  b: string;
  database: TestDatabase;
  servers: ServerProcess[];
  close(): Promise<void>;
}

export async function startCluster(settings: Record<string, string> = {}): Promise<Cluster> {
  await ensureBuilt();
  const database = await createTestDatabase();
  const dirs: string[] = [];
  const servers: ServerProcess[] = [];
  try {
    for (let i = 0; i < 2; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-mp-'));
      dirs.push(dir);
      servers.push(
        await startServerProcess({
          DATABASE_URL: database.url!,
          PARLEY_DATA_DIR: dir,
          PARLEY_JWT_SECRET: 'multi-process-secret-long-enough-for-hs256-0123456789',
          PARLEY_ENCRYPTION_KEY: 'multi-process-encryption-key-0123456789abcdef',
          PARLEY_LOGIN_MAX_PER_IP: '10000',
          PARLEY_WIDGET_MESSAGES_PER_MINUTE: '10000',
          PARLEY_WIDGET_SESSIONS_PER_IP: '10000',
          ...settings,
        }),
      );
    }
  } catch (err) {
    for (const s of servers) s.child.kill('SIGKILL');
    await database.drop();
    throw err;
  }
  return {
    a: servers[0]!.base,
    b: servers[1]!.base,
    database,
    servers,
    close: async () => {
      await Promise.all(servers.map((s) => stopServerProcess(s).catch(() => s.child.kill('SIGKILL'))));
      await database.drop();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

let seq = 0;

export interface Owner {
  access: string;
  refresh: string;
  login: string;
  pass: string;
}

/** A new account through `base`. */
export async function register(base: string): Promise<Owner> {
  const login = `mp-${process.pid}-${++seq}@example.com`;
  const pass = 'multi process password';
  const res = await call(base, 'POST', '/v1.3/auth/register', { body: { login, pass, name: `Shop ${seq}` } });
  if (res.status !== 200) throw new Error(`register: ${res.status} ${JSON.stringify(res.body)}`);
  return { access: res.body.accessToken.token, refresh: res.body.refreshToken.token, login, pass };
}

export interface WidgetConversation {
  integrationId: number;
  key: string;
  visitorToken: string;
  leadId: number;
}

/** A site widget with one visitor who wrote once: a lead the owner can answer. */
export async function widgetConversation(c: Cluster, owner: Owner): Promise<WidgetConversation> {
  const w = await call(c.a, 'POST', '/v1.3/integrations', { token: owner.access, body: { type: 'widget' } });
  if (w.status !== 200) throw new Error(`widget: ${w.status} ${JSON.stringify(w.body)}`);
  const session = await call(c.a, 'POST', '/widget/v1/sessions', { body: { key: w.body.widget.key } });
  const visitorToken = session.body.token as string;
  const said = await call(c.a, 'POST', '/widget/v1/messages', { token: visitorToken, body: { clientId: `c${++seq}`, text: 'hello' } });
  if (said.status !== 200) throw new Error(`visitor message: ${said.status} ${JSON.stringify(said.body)}`);
  const lead = await c.database.db.kysely
    .selectFrom('leads')
    .select('id')
    .where('integration_id', '=', w.body.id)
    .executeTakeFirstOrThrow();
  return { integrationId: w.body.id, key: w.body.widget.key, visitorToken, leadId: lead.id };
}

/** A WebSocket client that keeps every message and lets a test await the one it expects. */
export class SocketClient {
  readonly messages: Array<Record<string, any>> = [];
  private waiters: Array<{ match: (m: Record<string, any>) => boolean; resolve: (m: Record<string, any>) => void }> = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as Record<string, any>;
      this.messages.push(m);
      for (const w of this.waiters.filter((w) => w.match(m))) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    });
  }

  static async open(url: string): Promise<SocketClient> {
    const ws = new WebSocket(url);
    const client = new SocketClient(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return client;
  }

  next(match: (m: Record<string, any>) => boolean): Promise<Record<string, any>> {
    const had = this.messages.find(match);
    if (had) return Promise.resolve(had);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  close(): void {
    this.ws.close();
  }
}

export const wsUrl = (base: string, pathAndQuery: string) => base.replace(/^http/, 'ws') + pathAndQuery;
