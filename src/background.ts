import type { Services } from './services.js';
import { startDeliveryWorker } from './webhooks/standalone.js';
import { startTelegramPoller } from './channels/telegram/start-poller.js';

/**
 * The background work of a Parley process: webhook delivery, and Telegram long polling for bots
 * that cannot be reached by webhook (no PARLEY_PUBLIC_URL). Servers run it unless PARLEY_WORKERS=off;
 * `parley worker` runs it in a process of its own.
 */
export function startBackgroundWorkers(services: Services): void {
  startDeliveryWorker(services);
  if (!services.deps.config.publicUrl) startTelegramPoller(services);
}

/** `parley worker`: runs the background work until SIGTERM/SIGINT, then stops it. */
export async function runWorkersUntilSignal(services: Services): Promise<string> {
  startBackgroundWorkers(services);
  services.deps.log.info({ workers: services.workers.map((w) => w.name) }, 'background workers running');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await Promise.all(services.workers.map((w) => w.stop()));
  return 'background workers stopped';
}
