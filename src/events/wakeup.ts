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
  const unlisten = opts.pgUrl ? listen(opts.pgUrl, opts.deliveriesOnly ? DELIVERIES_CHANNEL : OUTBOX_CHANNEL, onWake, opts.log) : undefined;
  return async () => {
    outboxSignal.off('recorded', listener);
    for (const t of followUps) clearTimeout(t);
    await unlisten?.();
  };
}

/**
 * Calls `heard` with the backend process id of each NOTIFY of parley_outbox naming this
 * installation's schema (this process's own included), on the process's shared LISTEN connection,
 * when the process has one (one of its readers listens): it never opens one of its own, so a
 * process that only writes (the CLI, a benchmark's pipeline) holds no connection that would keep it
 * running. Returns the unsubscribe function, or undefined when nothing listens yet.
 */
export function joinOutboxNotify(pgUrl: string, heard: (pid: number) => void, log: Logger): (() => Promise<void>) | undefined {
  const shared = listening.get(`${OUTBOX_CHANNEL}\n${pgUrl}`);
  if (!shared || shared.closed) return undefined;
  return listen(pgUrl, OUTBOX_CHANNEL, heard, log);
}

/** One LISTEN connection per database URL and channel in a process, whoever its readers are. */
interface Listening {
  /** Each is called with the notifying backend's process id. */
  readers: Set<(pid: number) => void>;
  /** Resolves with the connection once it listens (undefined: it failed or was given up). */
  client: Promise<{ end(): Promise<void> } | undefined>;
  closed: boolean;
}
const listening = new Map<string, Listening>();

/**
 * Calls `onWake` on each NOTIFY of `channel` naming this installation's schema. The readers of a
 * process share one connection: each NOTIFY of another process wakes one PostgreSQL backend and
 * one socket per process, not one per reader. Returns the unsubscribe function; the connection
 * ends with its last reader.
 */
function listen(url: string, channel: string, onWake: (pid: number) => void, log: Logger): () => Promise<void> {
  const key = `${channel}\n${url}`;
  let shared = listening.get(key);
  if (!shared) {
    const entry: Listening = { readers: new Set(), client: Promise.resolve(undefined), closed: false };
    entry.client = connectListener(url, channel, entry, log);
    listening.set(key, entry);
    shared = entry;
  }
  const own = shared;
  // A reader added twice (the same function) is still one reader: wrap it.
  const reader = (pid: number) => onWake(pid);
  own.readers.add(reader);
  return async () => {
    own.readers.delete(reader);
    if (own.readers.size || own.closed) return;
    own.closed = true;
    if (listening.get(key) === own) listening.delete(key);
    const client = await own.client;
    await client?.end().catch(() => {});
  };
}

async function connectListener(url: string, channel: string, shared: Listening, log: Logger) {
  try {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: url });
    c.on('error', (err) => log.warn({ err }, 'outbox LISTEN connection failed; polling continues'));
    await c.connect();
    if (shared.closed) return void (await c.end());
    // A NOTIFY names the schema of the installation that sent it; channels are the database's.
    // An empty one comes from a process of a version before the schema was named: it wakes.
    const { rows } = await c.query<{ schema: string }>('select current_schema() as schema');
    const schema = rows[0]?.schema;
    c.on('notification', (n) => {
      if (n.payload && n.payload !== schema) return;
      for (const reader of shared.readers) reader(n.processId);
    });
    await c.query(`LISTEN ${channel}`);
    if (shared.closed) return void (await c.end());
    return c;
  } catch (err) {
    log.warn({ err }, 'outbox LISTEN unavailable; polling continues');
    return undefined;
  }
}
