import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { ensureBuilt, startServerProcess, stopServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { allDelivered, heldDeliveries, VISITORS } from '../helpers/webhook-crash.js';
import { releaseDeadWorkersLeases } from '../../src/webhooks/worker-liveness.js';

let database: TestDatabase;
const dirs: string[] = [];
const started: ServerProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  database = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await database?.drop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

async function startServer(): Promise<ServerProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-failover-'));
  dirs.push(dir);
  const server = await startServerProcess({
    DATABASE_URL: database.url!,
    PARLEY_DATA_DIR: dir,
    PARLEY_JWT_SECRET: 'multi-process-secret-long-enough-for-hs256-0123456789',
    PARLEY_ENCRYPTION_KEY: 'multi-process-encryption-key-0123456789abcdef',
    PARLEY_WEBHOOK_ALLOW_PRIVATE: '1',
    PARLEY_WIDGET_MESSAGES_PER_MINUTE: '10000',
    PARLEY_WIDGET_SESSIONS_PER_IP: '10000',
  });
  started.push(server);
  return server;
}

const leaseOwners = async () =>
  (
    await sql<{ leased_by: string }>`select leased_by from deliveries where status = 'pending' and lease_until is not null`.execute(
      database.db.kysely,
    )
  ).rows.map((r) => r.leased_by);

describe('webhook deliveries when one of two processes on PostgreSQL dies', () => {
  it("the survivor takes the killed process's in-flight deliveries within a few seconds, in order, no extra duplicates", async () => {
    const a = await startServer();
    const held = await heldDeliveries(a.base, 'failover');
    const b = await startServer();
    // A's leases, and A alive: nothing of a live worker is freed.
    expect((await leaseOwners()).filter((o) => o.includes(`:${a.child.pid}:`))).toHaveLength(VISITORS);
    expect(await releaseDeadWorkersLeases(database.db)).toBe(0);
    expect(await leaseOwners()).toHaveLength(VISITORS);
    await stopServerProcess(a, 'SIGKILL');
    // B finds A's lock gone (LIVENESS_CHECK_MS) instead of waiting PARLEY_WEBHOOK_TIMEOUT_MS + 30 s.
    const elapsed = await allDelivered(held, 5_000);
    expect(elapsed).toBeLessThan(5_000);
    expect(b.child.exitCode).toBeNull();
    await held.receiver.close();
  }, 60_000);
});
