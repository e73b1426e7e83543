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
    const said = await h.request({ method: 'POST', url: '/widget/v1/messages', payload: { clientId: 'a', text: 'hi' }, headers: { ...json, authorization: `Bearer ${token}` } });
    expect(said.statusCode, said.body).toBe(200);
    const lead = await h.database.db.kysely.selectFrom('leads').selectAll().where('integration_id', '=', w.id).executeTakeFirstOrThrow();

    const { received, ws } = await openVisitorSocket(h, token);
    const employees: string[] = [];
    const endStream = await h.services.realtime.subscribe(await h.services.auth.authenticate(owner.access), (m) => employees.push(m));

    // The other core has no socket of this visitor: only the outbox can bring these here.
    const auth = await other.auth.authenticate(owner.access);
    await other.widget.employeeTyping(auth, lead.id, true);
    const [reply] = await other.messaging.send(auth, lead.id, { message: { text: 'from B' } }, { honourSaId: true });
    await h.services.visitorPush.poll();
    await expect.poll(() => received.length).toBe(3);
    expect(received.filter((m) => m.type !== 'ready')).toEqual([
      { type: 'typing', typing: true },
      { type: 'message', message: expect.objectContaining({ from: 'agent', text: 'from B' }) },
    ]);
    const stored = await h.database.db.kysely.selectFrom('messages').selectAll().where('id', '=', Number(reply!.messageId)).executeTakeFirstOrThrow();
    expect(received[2]!.message.id).toBe(stored.external_id);

    await h.services.realtime.poll();
    expect(employees.map((m) => JSON.parse(m).event.type)).toEqual(['message.outgoing']);
    const typingEvents = await h.database.db.kysely.selectFrom('events').select('id').where('type', '=', 'widget.typing').execute();
    expect(typingEvents).toHaveLength(1);
    const deliveries = await h.database.db.kysely.selectFrom('deliveries').select('id').where('event_id', '=', typingEvents[0]!.id).execute();
    expect(deliveries).toEqual([]);
    endStream();
    ws.terminate();
  });
});
