import pino from 'pino';
import { loadConfig, ConfigError } from './config.js';
import { openCore } from './boot.js';
import { buildApp } from './app.js';
import { VERSION } from './version.js';
import { startBackgroundWorkers } from './background.js';

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
  const { db, services } = await openCore(config, log);
  // Background work runs here unless PARLEY_WORKERS=off (then: `parley worker` processes).
  if (config.workers === 'on') startBackgroundWorkers(services);
  services.workers.push(services.realtime);
  const app = await buildApp({ services, logger: log });

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    try {
      // In-flight requests finish; new connections are refused; then workers and the database close.
      await app.close();
      await Promise.all(services.workers.map((w) => w.stop()));
      await db.close();
      process.exit(0);
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
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
