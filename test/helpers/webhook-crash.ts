import { expect } from 'vitest';
import { call, withTimeout } from './server-process.js';
import { Receiver } from './webhook-receiver.js';

/** Visitors and messages each: one delivery per lead is in flight at a time (order per lead). */
export const VISITORS = 6;
export const MESSAGES_EACH = 5;
export const TOTAL = VISITORS * MESSAGES_EACH;

export interface HeldDeliveries {
  receiver: Receiver;
  /** The `webhook-id`s the receiver holds unanswered (in flight at the crash). */
  inFlight: Set<string>;
}

/**
 * Through a server at `base`: an account whose webhook (message.incoming only) points at a
 * receiver that holds every request, a site widget, and VISITORS visitors who wrote MESSAGES_EACH
 * messages each. Resolves once one delivery per lead is held by the receiver.
 */
export async function heldDeliveries(base: string, tag: string): Promise<HeldDeliveries> {
  const receiver = await new Receiver().start();
  receiver.hold = true;
  const login = `crash-${tag}-${process.pid}@example.com`;
  const reg = await call(base, 'POST', '/v1.3/auth/register', { body: { login, pass: 'crash test password', name: 'Crash' } });
  expect(reg.status, JSON.stringify(reg.body)).toBe(200);
  const token = reg.body.accessToken.token as string;
  const hook = await call(base, 'POST', '/v1.3/webhooks', { token, body: { url: `${receiver.url}/hook`, events: ['message.incoming'] } });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  const widget = await call(base, 'POST', '/v1.3/integrations', { token, body: { type: 'widget' } });
  expect(widget.status, JSON.stringify(widget.body)).toBe(200);
  const visitors: string[] = [];
  for (let v = 0; v < VISITORS; v++) {
    const session = await call(base, 'POST', '/widget/v1/sessions', { body: { key: widget.body.widget.key } });
    visitors.push(session.body.token as string);
  }
  for (let m = 0; m < MESSAGES_EACH; m++) {
    for (const [v, visitorToken] of visitors.entries()) {
      const said = await call(base, 'POST', '/widget/v1/messages', { token: visitorToken, body: { clientId: `${v}-${m}`, text: `m${m}` } });
      expect(said.status, JSON.stringify(said.body)).toBe(200);
    }
  }
  await withTimeout(receiver.waitFor(VISITORS), 10_000, 'one held delivery per lead');
  return { receiver, inFlight: new Set(receiver.received.map((r) => String(r.headers['webhook-id']))) };
}

/**
 * Answers at once from now on, and resolves when every event reached the receiver, failing after
 * `withinMs`; then checks: each lead's events arrived in order (first arrivals), and only the
 * deliveries in flight at the crash came twice.
 */
export async function allDelivered(held: HeldDeliveries, withinMs: number): Promise<number> {
  const { receiver, inFlight } = held;
  const start = Date.now();
  receiver.release();
  const distinct = () => new Set(receiver.received.map((r) => String(r.headers['webhook-id']))).size;
  await withTimeout(
    new Promise<void>((resolve) => {
      const check = () => (distinct() >= TOTAL ? resolve() : void receiver.waitFor(receiver.received.length + 1).then(check));
      check();
    }),
    withinMs,
    `all ${TOTAL} deliveries (had ${distinct()})`,
  );
  const elapsed = Date.now() - start;
  const firstSeen = new Map<string, { leadId: number; eventId: number }>();
  const counts = new Map<string, number>();
  for (const r of receiver.received) {
    const id = String(r.headers['webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
    if (!firstSeen.has(id)) firstSeen.set(id, { leadId: JSON.parse(r.body).leadId as number, eventId: Number(id.slice('msg_'.length)) });
  }
  const repeated = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
  expect(repeated.every((id) => inFlight.has(id))).toBe(true);
  expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
  const byLead = new Map<number, number[]>();
  for (const { leadId, eventId } of firstSeen.values()) byLead.set(leadId, [...(byLead.get(leadId) ?? []), eventId]);
  expect(byLead.size).toBe(VISITORS);
  for (const ids of byLead.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
  return elapsed;
}
