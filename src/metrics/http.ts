import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.js';
import { pendingDeliveries } from '../webhooks/delivery-queue.js';
import { metrics } from './metrics.js';

/**
 * `GET /metrics` in Prometheus' text format, and the per-request instruments behind it. Off unless
 * PARLEY_METRICS_TOKEN is set (then the path answers 404 like any unknown one and no hook runs);
 * on, a scrape must carry `Authorization: Bearer <token>`. docs/operations.md has a scrape config.
 */
export function registerMetrics(app: FastifyInstance, services: Services): void {
  const { config } = services.deps;
  const token = config.metricsToken;
  if (!token) return;
  metrics.enableDefaults();

  app.addHook('onResponse', async (req, reply) => {
    // The route template, never the raw URL: ids in paths would make a series per lead.
    const route = req.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    metrics.httpRequests.inc({ route, method: req.method, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route, method: req.method }, reply.elapsedTime / 1000);
  });

  const { db, clock } = services.deps;
  // Both queue gauges come from one query per scrape (the scrape handler forgets the last one).
  let pendingRead: ReturnType<typeof pendingDeliveries> | undefined;
  const pending = () => (pendingRead ??= pendingDeliveries(db));
  metrics.gauge(
    'parley_webhook_pending_deliveries',
    'Webhook deliveries waiting to be sent (due or retrying), on active endpoints',
    [],
    async () => {
      const p = await pending();
      return [[{}, p.count]];
    },
  );
  metrics.gauge(
    'parley_webhook_oldest_pending_seconds',
    'Age of the oldest delivery waiting on an active endpoint (0 when none waits)',
    [],
    async () => {
      const p = await pending();
      return [[{}, p.oldestCreatedAt === undefined ? 0 : Math.max(0, (clock.now() - p.oldestCreatedAt) / 1000)]];
    },
  );
  metrics.gauge('parley_realtime_connections', 'Open WebSocket connections, by kind', ['kind'], async () => [
    [{ kind: 'agent' }, services.realtime.size],
    [{ kind: 'visitor' }, services.widget.hub.size],
  ]);
  metrics.gauge('parley_db_pool_connections', 'Database pool connections by state (PostgreSQL)', ['state'], async () => {
    const pool = db.poolStats?.();
    if (!pool) return [];
    return [
      [{ state: 'total' }, pool.total],
      [{ state: 'idle' }, pool.idle],
      [{ state: 'waiting' }, pool.waiting],
    ];
  });

  const expected = digest(token);
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!crypto.timingSafeEqual(digest(given), expected)) {
      return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'Unauthorized', code: 'unauthorized' });
    }
    pendingRead = undefined;
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}

function digest(text: string): Buffer {
  return crypto.createHash('sha256').update(text).digest();
}
