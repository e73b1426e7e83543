import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { FakeBridge } from '../helpers/fake-bridge.js';
import { pathToFileURL } from 'node:url';
import { call as callJson, root, startServer, type ServerProcess } from '../browser/agent-app-support.js';

/**
 * Real server processes with the account bridge. On PostgreSQL: two processes on one database, the
 * bridge connected to the first and every API call made on the second, so each request crosses
 * processes (bridge_requests + LISTEN/NOTIFY). On SQLite (one process per database file): the same
 * calls on the one process.
 */
let dataDir: string;
let database: TestDatabase | undefined;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  const { ensureBuilt } = (await import(pathToFileURL(path.join(root, 'scripts', 'ensure-built.mjs')).href)) as { ensureBuilt: () => void };
  ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-bridge-e2e-'));
  if (DIALECT === 'postgres') database = await createTestDatabase();
  const env = {
    PARLEY_DATA_DIR: dataDir,
    PARLEY_SIGNUP: 'open',
    PARLEY_JWT_SECRET: 'e2e-bridge-secret-long-enough-for-hs256-0123456789',
    PARLEY_ENCRYPTION_KEY: 'e2e-bridge-encryption-key-0123456789abcdef',
    PARLEY_SEND_TIMEOUT_MS: '5000',
    ...(database?.url ? { DATABASE_URL: database.url } : {}),
  };
  servers.push(await startServer(env));
  if (database) servers.push(await startServer(env));
}, 180_000);

afterAll(async () => {
  for (const server of servers) await server.stop();
  await database?.drop();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('the account bridge across server processes', () => {
  it('a write-first post, a send, a refusal and a contact check made on one process reach the bridge held by another', async () => {
    const holder = servers[0]!;
    const caller = servers.at(-1)!;
    const registered = await callJson(caller.base, 'POST', '/v1.3/auth/register', {
      body: { login: 'bridge-e2e@example.com', pass: 'e2e password 123', name: 'Shop' },
    });
    expect(registered.status).toBe(200);
    const token = registered.body.accessToken.token as string;
    const connected = await callJson(caller.base, 'POST', '/v1.3/integrations', { token, body: { type: 'msgrb_personal' } });
    expect(connected.body).toMatchObject({ status: 'connecting' });
    const { id } = connected.body;

    const bridge = await FakeBridge.connect(holder.base, id, connected.body.bridge.token);
    bridge.contacts.add('someone');
    await bridge.login({ login: 'shop_account', externalId: '1001' });
    await vi.waitFor(
      async () =>
        expect((await callJson(caller.base, 'GET', `/v1.3/integrations/${id}/bridge`, { token })).body).toMatchObject({
          status: 'active',
          online: true,
        }),
      {
        timeout: 5000,
        interval: 20,
      },
    );

    const post = await callJson(caller.base, 'POST', '/v1.3/messaging/post', {
      token,
      body: { saId: id, destination: 'someone', message: { text: 'first contact' }, customId: 'p-1' },
    });
    expect(post.status, JSON.stringify(post.body)).toBe(200);
    const leadId = post.body[0].leadId as number;
    const repeat = await callJson(caller.base, 'POST', '/v1.3/messaging/post', {
      token,
      body: { saId: id, destination: 'someone', message: { text: 'first contact' }, customId: 'p-1' },
    });
    expect(repeat.body).toEqual(post.body);

    const sent = await callJson(caller.base, 'POST', `/v1.3/messaging/${leadId}/send`, { token, body: { message: { text: 'a reply' } } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);

    bridge.mode = { refuse: 'PEER_FLOOD' };
    const refused = await callJson(caller.base, 'POST', `/v1.3/messaging/${leadId}/send`, { token, body: { message: { text: 'no' } } });
    expect(refused).toMatchObject({ status: 422, body: { error: 'PEER_FLOOD' } });
    bridge.mode = { accept: true };

    const check = await callJson(caller.base, 'POST', '/v1.3/messaging/check-contact', { token, body: { saId: id, chatId: 'someone' } });
    expect(check).toEqual({ status: 200, body: { exists: true } });

    expect(bridge.acted.map((m) => [m.type, m.text ?? m.contact])).toEqual([
      ['send', 'first contact'],
      ['send', 'a reply'],
      ['send', 'no'],
      ['check', 'someone'],
    ]);

    // The bridge leaves: every process answers 502 channel_offline.
    await bridge.close();
    await vi.waitFor(
      async () => expect((await callJson(caller.base, 'GET', `/v1.3/integrations/${id}/bridge`, { token })).body.online).toBe(false),
      { timeout: 5000, interval: 20 },
    );
    const offline = await callJson(caller.base, 'POST', `/v1.3/messaging/${leadId}/send`, { token, body: { message: { text: 'x' } } });
    expect(offline).toMatchObject({ status: 502, body: { code: 'channel_offline' } });
  }, 60_000);
});
