import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from './helpers/harness.js';
import { sample } from './helpers/multipart.js';
import { FakeVk } from './helpers/fake-vk.js';
import { LongPoller } from '../src/channels/social/long-poller.js';
import { VkPollSource } from '../src/channels/vk/vk-poller.js';
import { startBackgroundWorkers } from '../src/background.js';

let vk: FakeVk;
let h: Harness;
let seq = 0;

beforeAll(async () => {
  vk = await FakeVk.start();
  h = await createHarness({ env: { PARLEY_VK_API_URL: vk.apiUrl } });
});
afterAll(async () => {
  await h?.close();
  await vk?.close();
});

const db = () => h.database.db.kysely;
/** A poller as a fresh process would build it (its sessions in memory, its cursor in the database). */
const poller = () => new LongPoller(new VkPollSource(h.services.social, h.services.deps.log), h.services.deps.log, 0);

async function connect() {
  const owner = await h.signUp();
  const n = ++seq;
  const token = `vk1.a.lp-${n}`;
  const community = vk.addCommunity(token, 300_000 + n, `lp${n}`);
  const res = await h.request({
    method: 'POST',
    url: '/v1.3/integrations',
    token: owner.access,
    payload: { type: 'social2_group', credentials: { token, groupId: String(community.id) } },
  });
  expect(res.statusCode).toBe(200);
  return { community, integrationId: res.json().id as number };
}

let id = 5000;
function messageNew(community: ReturnType<FakeVk['addCommunity']>, text: string) {
  const from = 40_000 + ++id;
  vk.users.set(from, { first_name: 'Lin', last_name: 'Poll', screen_name: `lin${from}`, photo_200: '', allowsMessages: true });
  return vk.event(community, 'message_new', { message: { id, date: 1772366400, peer_id: from, from_id: from, text, attachments: [] } });
}
const texts = async (integrationId: number) =>
  (await db().selectFrom('messages').select('text').where('integration_id', '=', integrationId).orderBy('id').execute()).map((m) => m.text);
const cursor = async (integrationId: number) =>
  (await db().selectFrom('channel_poll_cursors').select('cursor').where('integration_id', '=', integrationId).executeTakeFirst())?.cursor;

describe('VK Bots Long Poll', () => {
  it('connects without a public address by enabling Bots Long Poll with the events Parley reads (no callback server)', async () => {
    const { community } = await connect();
    expect(community.servers).toEqual([]);
    expect(community.longPoll.enabled).toBe(true);
    expect(community.longPoll.settings).toMatchObject({
      api_version: '5.199',
      message_new: '1',
      message_reply: '1',
      message_edit: '1',
      wall_reply_new: '1',
      market_comment_new: '1',
    });
    expect(vk.callsOf('groups.addCallbackServer')).toEqual([]);
  });

  it('stores events, keeps ts durably after each batch, and a restarted poller resumes there', async () => {
    const { community, integrationId } = await connect();
    const first = poller();
    // The session starts at VK's current ts: what was queued before connecting is not Parley's.
    expect(await first.runOnce()).toBe(0);
    vk.queue(community, messageNew(community, 'one'));
    vk.queue(community, messageNew(community, 'two'));
    expect(await first.runOnce()).toBe(2);
    expect(await cursor(integrationId)).toBe(String(vk.nextTs(community)));
    expect(await first.runOnce()).toBe(0);
    const restarted = poller();
    expect(await restarted.runOnce()).toBe(0);
    vk.queue(community, messageNew(community, 'three'));
    expect(await restarted.runOnce()).toBe(1);
    expect(await texts(integrationId)).toEqual(['one', 'two', 'three']);
  });

  it('handles failed 2 (new key, same ts: nothing lost), failed 1 (VK moves ts) and failed 3 (new key and ts)', async () => {
    const { community, integrationId } = await connect();
    const p = poller();
    await p.runOnce();
    vk.expireKey(community);
    vk.queue(community, messageNew(community, 'during the key change'));
    const sessionsBefore = vk.callsOf('groups.getLongPollServer').length;
    expect(await p.runOnce()).toBe(0);
    expect(await p.runOnce()).toBe(1);
    expect(vk.callsOf('groups.getLongPollServer').length).toBe(sessionsBefore + 1);
    expect(await texts(integrationId)).toEqual(['during the key change']);

    vk.pollAnswersNext(community, { failed: 1, ts: '424242' });
    expect(await p.runOnce()).toBe(0);
    expect(await cursor(integrationId)).toBe('424242');
    // ts ahead of VK's history: the fake answers failed 1 with its current ts, as VK does.
    expect(await p.runOnce()).toBe(0);
    expect(await cursor(integrationId)).toBe(String(vk.nextTs(community)));

    vk.queue(community, messageNew(community, 'lost by VK'));
    vk.pollAnswersNext(community, { failed: 3 });
    expect(await p.runOnce()).toBe(0);
    expect(await cursor(integrationId)).toBe(String(vk.nextTs(community)));
    vk.queue(community, messageNew(community, 'after the restart'));
    expect(await p.runOnce()).toBe(1);
    expect(await texts(integrationId)).toEqual(['during the key change', 'after the restart']);
  });

  it('reads a batch cut short by a provider failure again from the saved ts, storing each event once', async () => {
    const { community, integrationId } = await connect();
    const p = poller();
    await p.runOnce();
    const before = await cursor(integrationId);
    const photo = messageNew(community, 'with a photo');
    const url = vk.addFlakyMedia(`flaky${integrationId}.jpg`, Buffer.from(sample('jpeg')), 'image/jpeg');
    (photo.object as { message: Record<string, unknown> }).message.attachments = [
      { type: 'photo', photo: { id: 1, owner_id: 1, sizes: [{ url, width: 10, height: 10 }] } },
    ];
    vk.queue(community, messageNew(community, 'before'));
    vk.queue(community, photo);
    vk.queue(community, messageNew(community, 'after'));
    expect(await p.runOnce()).toBe(1);
    expect(await cursor(integrationId)).toBe(before);
    expect(await p.runOnce()).toBe(3);
    expect(await texts(integrationId)).toEqual(['before', 'with a photo', 'after']);
  });

  it('skips a malformed event and keeps the rest of the batch; stops polling a community whose token VK refuses', async () => {
    const { community, integrationId } = await connect();
    const p = poller();
    await p.runOnce();
    vk.queue(community, vk.event(community, 'message_new', { message: { id: 'nope' } }));
    vk.queue(community, messageNew(community, 'fine'));
    expect(await p.runOnce()).toBe(1);
    expect(await texts(integrationId)).toEqual(['fine']);

    const other = await connect();
    for (const [token, c] of vk.tokens) if (c === other.community) vk.tokens.delete(token);
    await poller().runOnce();
    const row = await db().selectFrom('integrations').select('status').where('id', '=', other.integrationId).executeTakeFirstOrThrow();
    expect(row.status).toBe('auth failure');
    expect((await h.services.social.pollableIntegrations('social2_group')).map((r) => r.id)).not.toContain(other.integrationId);
  });

  it('runs as background workers of a process without a public address, beside Telegram polling', async () => {
    startBackgroundWorkers(h.services);
    try {
      expect(h.services.workers.map((w) => w.name)).toEqual(expect.arrayContaining(['telegram-poller', 'vk-poller', 'ok-poller']));
    } finally {
      await Promise.all(h.services.workers.map((w) => w.stop()));
      h.services.workers.length = 0;
    }
  });
});
