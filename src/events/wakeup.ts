import { DELIVERIES_CHANNEL, outboxSignal, OUTBOX_CHANNEL } from './outbox.js';
import type { Logger } from '../domain/context.js';

/**
 * Calls `onWake` when new outbox rows may exist: on the in-process nudge that recordEvent emits
 * (before its transaction commits, so a second call follows a moment later for PostgreSQL, whose
 * readers on other connections may not see the rows yet; on SQLite the single connection already
 * serializes the reader behind the commit, and `followUp: false` spares it), and, with a PostgreSQL
 * URL, on LISTEN parley_outbox (sent by every process's OutboxNotifier, naming its schema: another
 * installation's in the same database is ignored). With `deliveriesOnly`, in-process nudges of
 * events that made no webhook delivery are ignored, and the channel listened to is
 * parley_deliveries, which is notified only for events that made deliveries. Returns the
 * unsubscribe function.
 */
export function onOutbox(
  onWake: () => void,
  opts: { pgUrl?: string; log: Logger; deliveriesOnly?: boolean; followUp?: boolean },
): () => Promise<void> {
  const followUps = new Set<NodeJS.Timeout>();
  // `deliveries`: how many webhook deliveries the event's fan-out wrote (absent: unknown).
  const listener = (_id?: number, deliveries?: number) => {
    if (opts.deliveriesOnly && deliveries === 0) return;
    onWake();
    if (opts.followUp === false) return;
    const t = setTimeout(() => {
      followUps.delete(t);
      onWake();
    }, 25);
    t.unref();
    followUps.add(t);
  };
  outboxSignal.on('recorded', listener);
  let client: { end(): Promise<void> } | undefined;
  let closed = false;
  if (opts.pgUrl) {
    void (async () => {
      try {
        const pg = (await import('pg')).default;
        const c = new pg.Client({ connectionString: opts.pgUrl });
        c.on('error', (err) => opts.log.warn({ err }, 'outbox LISTEN connection failed; polling continues'));
        await c.connect();
        if (closed) return void (await c.end());
        // A NOTIFY names the schema of the installation that sent it; channels are the database's.
        // An empty one comes from a process of a version before the schema was named: it wakes.
        const { rows } = await c.query<{ schema: string }>('select current_schema() as schema');
        const schema = rows[0]?.schema;
        c.on('notification', (n) => {
          if (!n.payload || n.payload === schema) onWake();
        });
        await c.query(`LISTEN ${opts.deliveriesOnly ? DELIVERIES_CHANNEL : OUTBOX_CHANNEL}`);
        client = c;
      } catch (err) {
        opts.log.warn({ err }, 'outbox LISTEN unavailable; polling continues');
      }
    })();
  }
  return async () => {
    closed = true;
    outboxSignal.off('recorded', listener);
    for (const t of followUps) clearTimeout(t);
    await client?.end().catch(() => {});
  };
}
