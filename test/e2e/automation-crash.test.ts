import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DIALECT, type TestDatabase } from '../helpers/database.js';
import { FakeVk } from '../helpers/fake-vk.js';
import { call, ensureBuilt, startServerProcess, stopServerProcess, withTimeout, type ServerProcess } from '../helpers/server-process.js';

/**
 * A rule's run cut short by kill -9 between two actions (docs/api/automation.md, "How they run"):
 * the real server, its reply to a VK user in flight (VK carried it out, its answer never came back),
 * is killed and started again on the same data; the run finishes with each action once.
 */
const PUBLIC = 'https://parley.example.com';
let dataDir: string;
let database: TestDatabase;
let vk: FakeVk;
const started: ServerProcess[] = [];

beforeAll(async () => {
  await ensureBuilt();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'parley-automation-crash-'));
  // SQLite: the file the server opens, for the test to read what it wrote.
  database = await createTestDatabase({ dataDir });
  vk = await FakeVk.start();
}, 120_000);

afterAll(async () => {
  for (const s of started) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
  await database?.drop();
  await vk?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function startServer(): Promise<ServerProcess> {
  const server = await startServerProcess({
    PARLEY_DATA_DIR: dataDir,
    ...(database.url ? { DATABASE_URL: database.url } : {}),
    PARLEY_VK_API_URL: vk.apiUrl,
    PARLEY_PUBLIC_URL: PUBLIC,
    // The killed process's run is taken up a second after it was claimed, and its reply's send
    // claim (this + 30 s) then lets the resumed run send again.
    PARLEY_AUTOMATION_RUN_LEASE_MS: '1000',
    PARLEY_SEND_TIMEOUT_MS: '2000',
  });
  started.push(server);
  return server;
}

/** Polls `check` (the server works on its own time) until it holds, failing after `ms`. */
async function until<T>(check: () => Promise<T | undefined>, ms: number, what: string): Promise<T> {
  return withTimeout(
    (async () => {
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })(),
    ms,
    what,
  );
}

describe(`automation after kill -9 (${DIALECT})`, () => {
  it('a run killed with its reply in flight: restarted on the same data, the reply goes once and the next action is done once', async () => {
    const first = await startServer();
    const reg = await call(first.base, 'POST', '/v1.3/auth/register', {
      body: { login: `automation-crash-${process.pid}@example.com`, pass: 'crash test password', name: 'Crash' },
    });
    expect(reg.status, JSON.stringify(reg.body)).toBe(200);
    const token = reg.body.accessToken.token as string;
    const community = vk.addCommunity('vk1.a.crash-token', 300_001, 'crashshop');
    const connected = await call(first.base, 'POST', '/v1.3/integrations', {
      token,
      body: { type: 'social2_group', credentials: { token: 'vk1.a.crash-token', groupId: String(community.id) } },
    });
    expect(connected.status, JSON.stringify(connected.body)).toBe(200);
    const integrationId = connected.body.id as number;
    const rule = await call(first.base, 'POST', '/v1.3/automation/rules', {
      token,
      body: {
        name: 'greet and tag',
        event: 'message.incoming',
        actions: [
          { type: 'reply', text: 'Hello {customer.name}' },
          { type: 'addTag', tag: 'greeted' },
        ],
      },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(200);
    const ruleId = rule.body.id as number;

    const from = 40_001;
    vk.users.set(from, {
      first_name: 'Ada',
      last_name: 'Lovelace',
      screen_name: 'ada',
      photo_200: 'https://sun.userapi.example/u40001.jpg',
      allowsMessages: true,
    });
    vk.holdAnswers('messages.send');
    const event = vk.event(community, 'message_new', {
      message: { id: 7001, date: 1772366400, peer_id: from, from_id: from, text: 'Hi', out: 0, attachments: [], fwd_messages: [] },
      client_info: { keyboard: true, lang_id: 0 },
    });
    const res = await fetch(`${first.base}/channels/vk/${integrationId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: vk.callback(community, `${PUBLIC}/channels/vk/${integrationId}`, event),
    });
    expect(await res.text()).toBe('ok');

    // The reply reached VK, which carried it out; its answer never comes: kill -9 meanwhile.
    await withTimeout(vk.waitForCalls('messages.send', 1), 20_000, 'the reply reaching VK');
    await stopServerProcess(first, 'SIGKILL');
    vk.answerAgain('messages.send');
    const second = await startServer();

    const runs = () => call(second.base, 'GET', `/v1.3/automation/rules/${ruleId}/runs`, { token });
    const run = await until(
      async () => {
        const r = await runs();
        const [latest] = r.body.runs as Array<{ actions: unknown[]; leadId: number }>;
        return latest?.actions.length === 2 ? latest : undefined;
      },
      60_000,
      'the run finishing',
    );
    expect(run.actions).toEqual([
      { type: 'reply', ok: true },
      { type: 'addTag', ok: true },
    ]);
    expect((await runs()).body.runs).toHaveLength(1);

    // One message delivered: the resumed send repeated the same random_id (made from the customId).
    const sends = vk.callsOf('messages.send');
    expect(sends.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sends.map((s) => s.params.random_id)).size).toBe(1);
    expect(vk.sent.filter((m) => m.peer_id === String(from))).toHaveLength(1);

    const db = database.db.kysely;
    const replies = await db
      .selectFrom('messages')
      .select('custom_id')
      .where('lead_id', '=', run.leadId)
      .where('incoming', '=', 0)
      .execute();
    expect(replies.map((m) => m.custom_id)).toEqual([expect.stringMatching(/^automation-/)]);
    const tags = await db
      .selectFrom('lead_tags')
      .innerJoin('tags', 'tags.id', 'lead_tags.tag_id')
      .select('tags.tag')
      .where('lead_tags.lead_id', '=', run.leadId)
      .execute();
    expect(tags.map((t) => t.tag)).toEqual(['greeted']);
    // The tag was added once: one change of the lead's tags.
    const changes = await db
      .selectFrom('events')
      .select('payload')
      .where('lead_id', '=', run.leadId)
      .where('type', '=', 'lead.changed')
      .execute();
    expect(changes.filter((e) => (JSON.parse(e.payload) as { changes: string[] }).changes.includes('tags'))).toHaveLength(1);
  }, 120_000);
});
