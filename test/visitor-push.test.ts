import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServices, type Services } from '../src/services.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { connectWidget, openVisitorSocket } from './widget-support.js';

let h: Harness;
let owner: SignedUp;
/** A second domain core on the same database: what another server process would run. */
let other: Services;
beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  other = createServices(h.services.deps);
});
afterAll(() => h.close());

const json = { 'content-type': 'application/json' };

describe('visitor pushes come from committed events', () => {
  it("a reply and typing stored by another process's core reach the socket held here; webhooks and the employees' stream never see typing", async () => {
    const w = await connectWidget(h, owner);
    const start = await h.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key: w.key }, headers: json });
    const { token } = start.json();
    const said = await h.request({
      method: 'POST',
      url: '/widget/v1/messages',
      payload: { clientId: 'a', text: 'hi' },
      headers: { ...json, authorization: `Bearer ${token}` },
    });
    expect(said.statusCode, said.body).toBe(200);
    const lead = await h.database.db.kysely.selectFrom('leads').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();

    const { received, ws } = await openVisitorSocket(h, token);
    const employees: string[] = [];
    const endStream = await h.services.realtime.subscribe(await h.services.auth.authenticate(owner.access), (m) => employees.push(m));

    // The other core has no socket of this visitor: only the outbox can bring these here.
    const auth = await other.auth.authenticate(owner.access);
    await other.widget.typing.employeeTyping(auth, lead.id, true);
    const [reply] = await other.messaging.send(auth, lead.id, { message: { text: 'from B' } }, { honourSaId: true });
    await h.services.visitorPush.poll();
    await expect.poll(() => received.length).toBe(3);
    expect(received.filter((m) => m.type !== 'ready')).toEqual([
      { type: 'typing', typing: true },
      { type: 'message', message: expect.objectContaining({ from: 'agent', text: 'from B' }) },
    ]);
    const stored = await h.database.db.kysely
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', Number(reply!.messageId))
      .executeTakeFirstOrThrow();
    expect(received[2]!.message.id).toBe(stored.external_id);

    await h.services.realtime.poll();
    expect(employees.map((m) => JSON.parse(m).event.type)).toEqual(['message.outgoing']);
    const typingEvents = await h.database.db.kysely.selectFrom('events').select('id').where('type', '=', 'widget.typing').execute();
    expect(typingEvents).toHaveLength(1);
    const deliveries = await h.database.db.kysely
      .selectFrom('deliveries')
      .select('id')
      .where('event_id', '=', typingEvents[0]!.id)
      .execute();
    expect(deliveries).toEqual([]);
    endStream();
    ws.terminate();
  });

  it("a visitor's typing reaches the employees' stream of another process, once per few seconds, live only, never to webhooks", async () => {
    const w = await connectWidget(h, owner);
    const start = await h.request({ method: 'POST', url: '/widget/v1/sessions', payload: { key: w.key }, headers: json });
    const { token } = start.json();
    const typingEvents = () =>
      h.database.db.kysely.selectFrom('events').selectAll().where('type', '=', 'widget.visitor.typing').orderBy('id').execute();
    const { received, ws } = await openVisitorSocket(h, token);
    await expect.poll(() => received.some((m) => m.type === 'ready')).toBe(true);

    // Nothing written yet: no conversation to show the typing in, nothing recorded.
    ws.send(JSON.stringify({ type: 'typing', typing: true }));
    ws.send(JSON.stringify({ type: 'ping' }));
    await expect.poll(() => received.some((m) => m.type === 'pong')).toBe(true);
    expect(await typingEvents()).toEqual([]);

    const said = await h.request({
      method: 'POST',
      url: '/widget/v1/messages',
      payload: { clientId: 'a', text: 'hi' },
      headers: { ...json, authorization: `Bearer ${token}` },
    });
    expect(said.statusCode, said.body).toBe(200);
    const lead = await h.database.db.kysely.selectFrom('leads').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();
    const employees: Array<Record<string, unknown>> = [];
    // The employees' stream of the other core: this visitor's socket is not there, only the outbox is.
    const endStream = await other.realtime.subscribe(await other.auth.authenticate(owner.access), (m) => employees.push(JSON.parse(m)));
    h.clock.advance(10_000);

    ws.send(JSON.stringify({ type: 'typing', typing: true }));
    ws.send(JSON.stringify({ type: 'typing', typing: true }));
    ws.send(JSON.stringify({ type: 'typing' }));
    await expect.poll(async () => (await typingEvents()).length).toBe(1);
    ws.send(JSON.stringify({ type: 'typing', typing: false }));
    await expect.poll(async () => (await typingEvents()).length).toBe(2);
    await other.realtime.poll();
    const typing = employees.filter((m) => m.type === 'typing');
    expect(typing).toEqual([
      { type: 'typing', leadId: lead.id, typing: true, from: 'visitor' },
      { type: 'typing', leadId: lead.id, typing: false, from: 'visitor' },
    ]);
    // Still typing a few seconds later: recorded again.
    h.clock.advance(3_000);
    ws.send(JSON.stringify({ type: 'typing', typing: true }));
    await expect.poll(async () => (await typingEvents()).length).toBe(3);

    const events = await typingEvents();
    const deliveries = await h.database.db.kysely
      .selectFrom('deliveries')
      .select('id')
      .where(
        'event_id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    expect(deliveries).toEqual([]);
    // A reconnecting stream's catch-up replays events, never typing.
    const replayed: Array<Record<string, unknown>> = [];
    const endReplay = await h.services.realtime.subscribe(
      await h.services.auth.authenticate(owner.access),
      (m) => replayed.push(JSON.parse(m)),
      events[0]!.id - 1,
    );
    expect(replayed.filter((m) => m.type === 'typing')).toEqual([]);
    endReplay();
    endStream();
    ws.terminate();
  });
});
