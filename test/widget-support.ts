import crypto from 'node:crypto';
import type { Harness, SignedUp } from './helpers/harness.js';

/** Helpers of the widget suites (not a test file: vitest runs *.test.ts only). */

export interface ConnectedWidget {
  id: number;
  key: string;
  secret: string;
  snippet: string;
}

export async function connectWidget(h: Harness, owner: SignedUp, settings: Record<string, unknown> = {}): Promise<ConnectedWidget> {
  const res = await h.request({ method: 'POST', url: '/v1.3/integrations', token: owner.access, payload: { type: 'widget', settings } });
  if (res.statusCode !== 200) throw new Error(`connect failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  return { id: body.id, key: body.widget.key, secret: body.widget.secret, snippet: body.widget.snippet };
}

export const sign = (secret: string, identifier: string) => crypto.createHmac('sha256', secret).update(identifier).digest('hex');

/** Row counts of everything a visitor request could write. */
export async function widgetSnapshot(h: Harness): Promise<Record<string, number>> {
  const db = h.database.db.kysely;
  const out: Record<string, number> = {};
  for (const table of ['widget_visitors', 'widget_sessions', 'messages', 'customers', 'profiles', 'sources', 'leads', 'events', 'files'] as const) {
    const row = await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}
