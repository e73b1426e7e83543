import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { cacheSnapshot } from './cache-stats.js';

/**
 * Prometheus metrics of this process (docs/operations.md, "Metrics"). Metrics describe a process,
 * so there is one set per process: the instrumented places record into `metrics` directly, which
 * costs a counter increment or a histogram bucket (tens of nanoseconds). Nothing is exported
 * unless `GET /metrics` is turned on with PARLEY_METRICS_TOKEN; the values that cost a query or a
 * look at another part (queue size, connections, pool) are read only when a scrape asks.
 */
export class ParleyMetrics {
  readonly registry = new Registry();
  private defaultsOn = false;

  readonly httpRequests = new Counter({
    name: 'parley_http_requests_total',
    help: 'HTTP requests answered, by route template, method and status code',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });

  readonly httpDuration = new Histogram({
    name: 'parley_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route template and method',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  readonly ingested = new Counter({
    name: 'parley_ingest_messages_total',
    help: 'Incoming messages committed (a redelivery of a stored message counts as duplicate)',
    labelNames: ['channel', 'result'] as const,
    registers: [this.registry],
  });

  readonly ingestDuration = new Histogram({
    name: 'parley_ingest_duration_seconds',
    help: 'Time from handing a normalized incoming message to the ingest pipeline to its commit, by channel type',
    labelNames: ['channel'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'parley_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered, retry (failed, will retry) or dead (failed, no retry left)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly leadReadCache = new Counter({
    name: 'parley_lead_read_cache_total',
    help: 'Lead list and funnel reads by whether the read cache answered them all (hit) or read the database (miss)',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly cacheLookups = new Counter({
    name: 'parley_cache_lookups_total',
    help: 'Look-ups of the in-memory caches (lead reads, kept rows, verified tokens, SQLite statements) by whether memory answered',
    labelNames: ['cache', 'result'] as const,
    registers: [this.registry],
    collect() {
      this.reset();
      for (const c of cacheSnapshot()) {
        this.inc({ cache: c.name, result: 'hit' }, c.hits);
        this.inc({ cache: c.name, result: 'miss' }, c.misses);
      }
    },
  });

  readonly cacheEntries = new Gauge({
    name: 'parley_cache_entries',
    help: 'Entries the in-memory caches hold now',
    labelNames: ['cache'] as const,
    registers: [this.registry],
    collect() {
      this.reset();
      for (const c of cacheSnapshot()) this.set({ cache: c.name }, c.entries);
    },
  });

  readonly cacheBytes = new Gauge({
    name: 'parley_cache_bytes',
    help: 'Estimated bytes the in-memory caches hold now (their JSON size; statements are not estimated)',
    labelNames: ['cache'] as const,
    registers: [this.registry],
    collect() {
      this.reset();
      for (const c of cacheSnapshot()) this.set({ cache: c.name }, c.bytes);
    },
  });

  readonly queryDuration = new Histogram({
    name: 'parley_db_query_duration_seconds',
    help: 'Time of one database statement',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5],
    registers: [this.registry],
  });

  readonly queryErrors = new Counter({
    name: 'parley_db_query_errors_total',
    help: 'Database statements that failed',
    registers: [this.registry],
  });

  /** Node.js process metrics (CPU, memory, event-loop lag, GC), from the first scrape configuration on. */
  enableDefaults(): void {
    if (this.defaultsOn) return;
    this.defaultsOn = true;
    collectDefaultMetrics({ register: this.registry, prefix: 'parley_', eventLoopMonitoringPrecision: 10 });
  }

  /** A gauge whose value is read at scrape time: `read` answers one value per label set. */
  gauge(name: string, help: string, labelNames: string[], read: () => Promise<Array<[Record<string, string>, number]>>): void {
    this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [labels, value] of await read()) this.set(labels, value);
      },
    });
  }
}

export const metrics = new ParleyMetrics();

/** The database's per-statement callback (boot.ts passes it when metrics are on). */
export function observeQuery(ms: number, failed: boolean): void {
  metrics.queryDuration.observe(ms / 1000);
  if (failed) metrics.queryErrors.inc();
}

/** One incoming message handed to the ingest pipeline and committed (or found stored before). */
export function observeIngest(channel: string, duplicate: boolean, ms: number): void {
  metrics.ingested.inc({ channel, result: duplicate ? 'duplicate' : 'stored' });
  if (!duplicate) metrics.ingestDuration.observe({ channel }, ms / 1000);
}
