import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { ensureBuilt, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { allDelivered, heldDeliveries } from '../helpers/webhook-crash.js';

let dataDir: string;
let database: TestDatabase | undefined;
const started: ServerProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-crash-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function startServer(): Promise<ServerProcess> {
  const server = await startServerProcess({
    PARLEY_DATA_DIR: dataDir,
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    PARLEY_WIDGET_MESSAGES_PER_MINUTE: '10000',
    PARLEY_WIDGET_SESSIONS_PER_IP: '10000',
  });
  started.push(server);
  return server;
}

describe(`webhook deliveries after a crash (${DIALECT})`, () => {
  it('a server killed with deliveries in flight to a slow receiver: restarted on the same data, all delivered within 5 s', async () => {
    const first = await startServer();
    const held = await heldDeliveries(first.base, 'restart');
    await stopServerProcess(first, 'SIGKILL');
    // The leases of the killed run would hold the endpoint for PARLEY_WEBHOOK_TIMEOUT_MS + 30 s.
    await startServer();
    const elapsed = await allDelivered(held, 5_000);
    expect(elapsed).toBeLessThan(5_000);
    await held.receiver.close();
  }, 60_000);
});
