import type { Services } from './services.js';
import { startDeliveryWorker } from './webhooks/standalone.js';
import { HistoryPruner } from './events/retention.js';
import { startTelegramPoller } from './channels/telegram/start-poller.js';
import { startPushWorker } from './push/start.js';
import { createAutomationWorker } from './automation/start.js';
import { startSocialPollers } from './channels/social/start-pollers.js';
import { dataWorkers } from './domain/portability/periodic-worker.js';
import { TableUpkeep } from './db/table-upkeep.js';

/**
 * The background work of a Parley process: webhook delivery, push notifications, automation
 * (distribution of new leads), pruning of old
 * history (PARLEY_EVENT_RETENTION_DAYS), table statistics on a PostgreSQL without autovacuum
 * (db/table-upkeep.ts), account export jobs and retention sweeps, and bot long polling (Telegram
 * bots, VK communities, OK groups) for channels that cannot be reached by webhook (no
 * PARLEY_PUBLIC_URL). Servers run it unless PARLEY_WORKERS=off; `parley worker` runs
 * it in a process of its own.
 */
export function startBackgroundWorkers(services: Services): void {
  startDeliveryWorker(services);
  startPushWorker(services);
  const automation = createAutomationWorker(services);
  void automation.start().catch((err: unknown) => services.deps.log.error({ err }, 'automation did not start'));
  services.workers.push(automation);
  const pruner = new HistoryPruner(services.deps, services.leases);
  pruner.start();
  services.workers.push(pruner);
  const upkeep = TableUpkeep.worker(services.deps, services.leases);
  if (upkeep) {
    upkeep.start();
    services.workers.push(upkeep);
  }
  for (const worker of dataWorkers(services)) {
    worker.start();
    services.workers.push(worker);
  }
  if (services.deps.config.botPolling !== 'off') startBotPollers(services);
}

/**
 * Bot long polling, for bots and communities that cannot be reached by webhook (no
 * PARLEY_PUBLIC_URL). Its own switch (PARLEY_BOT_POLLING): `on` polls even in a server with
 * PARLEY_WORKERS=off; `off` never. A lease per integration lets one process poll each at a time.
 */
export function startBotPollers(services: Services): void {
  if (services.deps.config.publicUrl) return;
  startTelegramPoller(services);
  startSocialPollers(services);
}

/** `parley worker`: runs the background work until SIGTERM/SIGINT, then stops it. */
export async function runWorkersUntilSignal(services: Services): Promise<string> {
  startBackgroundWorkers(services);
  services.deps.log.info({ workers: services.workers.map((w) => w.name) }, 'background workers running');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  // Webhook sends still out are given back (sent again by the next worker), not waited for.
  for (const w of services.workers) w.abandon?.();
  await Promise.all(services.workers.map((w) => w.stop()));
  return 'background workers stopped';
}
