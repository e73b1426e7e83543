import type { FastifyInstance } from 'fastify';
import type { Logger } from './domain/context.js';
import type { BackgroundWorker } from './domain/workers.js';

/** WebSocket close code "going away": the server is shutting down (clients reconnect elsewhere). */
export const GOING_AWAY = 1001;

/** The longest the drain waits for keep-alive connections to take their last answer. */
const DRAIN_MAX_MS = 1000;

declare module 'fastify' {
  interface FastifyInstance {
    /** Set at shutdown: every answer carries `Connection: close`, so keep-alive clients leave cleanly. */
    draining: boolean;
  }
}

/** Part of buildApp: the flag and the hook that makes answers close their connection while draining. */
export function installDrain(app: FastifyInstance): void {
  app.decorate('draining', false);
  app.addHook('onSend', async (_req, reply) => {
    if (app.draining) reply.header('connection', 'close');
  });
}

/** Closes every open WebSocket (agents' realtime stream, visitors' sockets) with 1001. */
export function closeWebSockets(app: FastifyInstance): void {
  const server = (app as FastifyInstance & { websocketServer?: { clients: Set<{ close(code: number, reason: string): void }> } })
    .websocketServer;
  for (const client of server?.clients ?? []) client.close(GOING_AWAY, 'server shutting down');
}

export interface ShutdownParts {
  app: FastifyInstance;
  workers: BackgroundWorker[];
  closeDatabase: () => Promise<void>;
  log: Logger;
  /** The whole shutdown's deadline (PARLEY_SHUTDOWN_TIMEOUT). */
  timeoutMs: number;
}

/**
 * SIGTERM/SIGINT, within one deadline (container runtimes kill at 10 s):
 * 1. background work gives up what it can redo (webhook sends in flight: retried from the outbox);
 * 2. WebSockets close with 1001;
 * 3. keep-alive connections drain: every answer carries `Connection: close`, for up to a second
 *    or until none is left, so a client mid-request gets its answer rather than a reset;
 * 4. the server stops (what is still idle is closed; in-flight requests finish; late ones get 503);
 * 5. workers stop and the database closes.
 * Resolves `clean`, or `deadline` when the deadline came first (the caller exits either way).
 */
export async function shutDown(parts: ShutdownParts): Promise<'clean' | 'deadline'> {
  const { app, workers, log } = parts;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), parts.timeoutMs);
    timer.unref();
  });
  const steps = (async (): Promise<'clean'> => {
    app.draining = true;
    for (const w of workers) w.abandon?.();
    closeWebSockets(app);
    await drainConnections(app, Math.min(DRAIN_MAX_MS, parts.timeoutMs / 4));
    await app.close();
    await Promise.all(workers.map((w) => w.stop()));
    await parts.closeDatabase();
    return 'clean';
  })();
  try {
    const outcome = await Promise.race([steps, deadline]);
    if (outcome === 'deadline') log.warn({ timeoutMs: parts.timeoutMs }, 'shutdown deadline reached; exiting anyway');
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/** Waits until the server holds no connection, or `maxMs`. */
async function drainConnections(app: FastifyInstance, maxMs: number): Promise<void> {
  if (!app.server.listening) return;
  const until = Date.now() + maxMs;
  while (Date.now() < until) {
    const open = await new Promise<number>((resolve) => app.server.getConnections((err, n) => resolve(err ? 0 : n)));
    if (open === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
