import type { Services } from '../../services.js';
import { TelegramPoller } from './telegram-poller.js';

/** Starts this process's Telegram long polling and registers it with the services' workers. */
export function startTelegramPoller(services: Services): TelegramPoller {
  const poller = new TelegramPoller(services.bots, services.deps.log, services.deps.config.telegramPollTimeout, services.leases);
  poller.start();
  services.workers.push(poller);
  return poller;
}
