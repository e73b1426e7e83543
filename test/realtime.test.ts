import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AddressInfo } from 'node:net';
import { createHarness, type Harness } from './helpers/harness.js';
import { createIntegration, createManager } from './helpers/fixtures.js';
import type { IncomingMessage } from '../src/domain/channels/channel.js';

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  base = `ws://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1.3/realtime`;
});
afterAll(() => h.close());

interface Msg {
  type: string;
  id?: number;
  event?: Record<string, unknown> & { type: string };
  error?: string;
}

/** A client that keeps every message and lets a test await the one it expects (no sleeping). */
class Client {
  readonly messages: Msg[] = [];
  private waiters: Array<{ match: (m: Msg) => boolean; resolve: (m: Msg) => void }> = [];
  readonly closed: Promise<number>;
  constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString()) as Msg;
      this.messages.push(m);
      for (const w of this.waiters.filter((w) => w.match(m))) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(m);
      }
    });
    this.closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  }
  static async open(query: string): Promise<Client> {
    const ws = new WebSocket(`${base}${query}`);
    const c = new Client(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    return c;
  }
  next(match: (m: Msg) => boolean): Promise<Msg> {
    const had = this.messages.find(match);
    if (had) return Promise.resolve(had);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }
  events(): Msg[] {
    return this.messages.filter((m) => m.type === 'event');
  }
  close(): void {
    this.ws.close();
  }
}

let seq = 0;
function message(socialId: string): IncomingMessage {
  seq += 1;
  return {
    externalId: `rt-${seq}`,
    datetime: h.clock.now(),
    sender: { socialId, name: socialId },
    channel: { externalId: `chat-${socialId}`, type: 'message' },
    text: `hi ${seq}`,
  };
}

async function integrationRow(accountId: number) {
  const id = await createIntegration(h, accountId, 'widget');
  return h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('realtime stream', () => {
  it('streams events after commit, filtered by what the employee may see', async () => {
    const owner = await h.signUp();
    const a = await integrationRow(owner.accountId);
    const b = await integrationRow(owner.accountId);
    const manager = await createManager(h, owner, { sources: [a.id] });
    const stranger = await h.signUp();

    const asOwner = await Client.open(`?token=${owner.access}`);
    const asManager = await Client.open(`?token=${manager.access}`);
    const asStranger = await Client.open(`?token=${stranger.access}`);
    await Promise.all([asOwner, asManager, asStranger].map((c) => c.next((m) => m.type === 'ready')));

    const hidden = await h.services.ingest.ingest(b, message('bea'));
    const seen = await h.services.ingest.ingest(a, message('abe'));
    const last = (c: Client) => c.next((m) => m.event?.type === 'message.incoming' && m.event.leadId === seen.leadId);
    await Promise.all([last(asOwner), last(asManager)]);

    expect(asOwner.events().map((m) => [m.event!.type, m.event!.leadId ?? null])).toEqual([
      ['customer.created', null],
      ['lead.created', hidden.leadId],
      ['message.incoming', hidden.leadId],
      ['customer.created', null],
      ['lead.created', seen.leadId],
      ['message.incoming', seen.leadId],
    ]);
    // The manager reaches integration A only: nothing of B's lead or customer.
    expect(asManager.events().map((m) => [m.event!.type, m.event!.leadId ?? null])).toEqual([
      ['customer.created', null],
      ['lead.created', seen.leadId],
      ['message.incoming', seen.leadId],
    ]);
    const ids = asOwner.events().map((m) => m.id!);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(asOwner.events()[2].event).toMatchObject({ accountId: owner.accountId, isNewLead: true });

    // Another account's stream saw nothing (a later event of its own proves it is live).
    const own = await integrationRow(stranger.accountId);
    const mine = await h.services.ingest.ingest(own, message('cid'));
    await asStranger.next((m) => m.event?.type === 'message.incoming');
    expect(
      asStranger.events().every((m) => m.event!.accountId === stranger.accountId && (m.event!.leadId ?? mine.leadId) === mine.leadId),
    ).toBe(true);
    for (const c of [asOwner, asManager, asStranger]) c.close();
  });

  it('on reconnect with lastEventId sends what was missed, then live events', async () => {
    const owner = await h.signUp();
    const a = await integrationRow(owner.accountId);
    const first = await Client.open(`?token=${owner.access}`);
    await first.next((m) => m.type === 'ready');
    await h.services.ingest.ingest(a, message('dan'));
    const lastSeen = await first.next((m) => m.event?.type === 'message.incoming');
    first.close();
    await first.closed;

    const missed1 = await h.services.ingest.ingest(a, message('dan'));
    const missed2 = await h.services.ingest.ingest(a, message('eve'));
    const again = await Client.open(`?token=${owner.access}&lastEventId=${lastSeen.id}`);
    await again.next((m) => m.type === 'ready');
    const caught = again.events();
    expect(caught.map((m) => m.event!.type)).toEqual(['message.incoming', 'customer.created', 'lead.created', 'message.incoming']);
    expect(caught[0].event!.leadId).toBe(missed1.leadId);
    expect(caught[3].event!.leadId).toBe(missed2.leadId);
    expect(caught.every((m) => m.id! > lastSeen.id!)).toBe(true);
    // `ready` comes after the catch-up; then live events continue.
    expect(again.messages.findIndex((m) => m.type === 'ready')).toBe(4);
    const live = await h.services.ingest.ingest(a, message('eve'));
    const got = await again.next((m) => m.type === 'event' && m.id! > caught[3].id!);
    expect(got.event).toMatchObject({ type: 'message.incoming', leadId: live.leadId });
    again.close();
  });

  it('a catch-up while events keep arriving ends and hands over to live events (no busy loop)', async () => {
    const owner = await h.signUp();
    const a = await integrationRow(owner.accountId);
    const auth = await h.services.auth.authenticate(owner.access);
    await h.services.ingest.ingest(a, message('fay'));
    const got: Msg[] = [];
    let ready = false;
    const subscribing = h.services.realtime
      .subscribe(auth, (m) => got.push(JSON.parse(m) as Msg), 0)
      .then((end) => {
        ready = true;
        return end;
      });
    // Messages land (and the hub polls) while the subscriber's catch-up is being read and sent:
    // some of them are held in its buffer and must be delivered, not re-buffered forever.
    let sent = 0;
    while (!ready && sent < 50) {
      await h.services.ingest.ingest(a, message('fay'));
      await h.services.realtime.poll();
      sent += 1;
    }
    const end = await subscribing;
    await h.services.ingest.ingest(a, message('fay'));
    await h.services.realtime.poll();
    const ids = got.filter((m) => m.type === 'event').map((m) => m.id!);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(got.filter((m) => m.event?.type === 'message.incoming').length).toBe(sent + 2);
    end();
  });

  it('accepts the token as the first message; refuses a bad token', async () => {
    const owner = await h.signUp();
    const c = await Client.open('');
    c.ws.send(JSON.stringify({ token: owner.access }));
    await c.next((m) => m.type === 'ready');
    c.close();

    const bad = await Client.open('?token=not-a-token');
    expect(await bad.closed).toBe(4401);
    expect(bad.messages).toEqual([{ type: 'error', error: 'unauthorized' }]);
    const badCursor = await Client.open(`?token=${owner.access}&lastEventId=abc`);
    expect(await badCursor.closed).toBe(4400);
  });
});
