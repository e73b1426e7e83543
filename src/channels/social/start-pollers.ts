import type { Services } from '../../services.js';
import { OkPollSource } from '../ok/ok-poller.js';
import { VkPollSource } from '../vk/vk-poller.js';
import { LongPoller } from './long-poller.js';

/** Starts this process's VK and OK long polling (one process per integration, by lease) and registers it with the services' workers. */
export function startSocialPollers(services: Services): LongPoller[] {
  const { log, config } = services.deps;
  const pollers = [
    new LongPoller(new VkPollSource(services.social, log), log, config.vkPollWait, services.leases),
    new LongPoller(new OkPollSource(services.social, log), log, config.okPollTimeout, services.leases),
  ];
  for (const poller of pollers) {
    poller.start();
    services.workers.push(poller);
  }
  return pollers;
}
