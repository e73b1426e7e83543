import pino from 'pino';
import { loadConfig, ConfigError } from './config.js';
import { openMigrating } from './db/open-migrating.js';
import { systemClock } from './domain/clock.js';
import { VERSION } from './version.js';
import { shutDown } from './shutdown.js';
import { startMemoryRelease } from './memory-release.js';

/** Process entry: config -> database -> app -> listen; SIGTERM/SIGINT close cleanly. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`parley: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const log = pino({ level: config.logLevel });
  // The database first: a new PostgreSQL schema is made while the rest of the server loads and
  // builds its app, which listens once the schema is there (docs/performance.md, "Start-up").
  const { db, schema } = await openMigrating(config, log);
  const [{ createServices }, { buildApp }, { startBackgroundWorkers, startBotPollers }] = await Promise.all([
    import('./services.js'),
    import('./app.js'),
    import('./background.js'),
  ]);
  const services = createServices({ db, config, clock: systemClock, log });
  services.workers.push(services.realtime, services.visitorPush, services.presence);
  const app = await buildApp({ services, logger: log, schema });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    try {
      const outcome = await shutDown({
        app,
        workers: services.workers,
        closeDatabase: () => db.close(),
        log,
        timeoutMs: config.shutdownTimeoutSeconds * 1000,
      });
      process.exit(outcome === 'clean' ? 0 : 1);
    } catch (err) {
      log.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({
    port: config.port,
    host: config.host,
    listenTextResolver: (address) => `Parley ${VERSION} serving ${address} (${db.dialect})`,
  });
  // Background work runs here unless PARLEY_WORKERS=off (then: `parley worker` processes). It starts
  // once the server listens, on the next turn of the event loop: none of it is needed for the first
  // answer (docs/performance.md, "Start-up").
  setImmediate(() => {
    if (closing) return;
    // The bundle's loader (scripts/server-loader.mjs) keeps the code this start compiled.
    const serving = (globalThis as Record<symbol, unknown>)[Symbol.for('parley.serving')];
    if (typeof serving === 'function') serving();
    if (config.workers === 'on') startBackgroundWorkers(services);
    else if (config.botPolling === 'on') startBotPollers(services);
    services.workers.push(startMemoryRelease());
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
