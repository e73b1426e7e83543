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
  for (const table of [
    'widget_visitors',
    'widget_sessions',
    'messages',
    'customers',
    'profiles',
    'sources',
    'leads',
    'events',
    'files',
  ] as const) {
    let query = db.selectFrom(table).select((eb) => eb.fn.countAll().as('n'));
    // A channel refusing a send is recorded in its health (docs/api/integrations.md "Health"): bookkeeping, not the refused data.
    if (table === 'events') query = query.where('type', '!=', 'integration.changed') as typeof query;
    const row = await query.executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

/** A visitor's socket (through the app, no network), open once `ready` came; `received` keeps every message. */
export async function openVisitorSocket(
  h: Harness,
  token: string,
): Promise<{ received: any[]; ws: { terminate(): void; send(data: string): void } }> {
  const received: any[] = [];
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const ws = await h.app.injectWS(
    `/widget/v1/socket?token=${token}`,
    {},
    {
      onInit: (socket) =>
        socket.on('message', (data) => {
          const m = JSON.parse(data.toString());
          received.push(m);
          if (m.type === 'ready') ready();
        }),
    },
  );
  await isReady;
  return { received, ws };
}
