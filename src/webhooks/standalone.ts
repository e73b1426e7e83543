import type { Services } from '../services.js';
import { DeliveryWorker } from './delivery-worker.js';

/** Starts this process's webhook delivery worker and registers it with the services. */
export function startDeliveryWorker(services: Services): DeliveryWorker {
  const worker = new DeliveryWorker(services.deps);
  worker.start();
  services.workers.push(worker);
  return worker;
}

/** `parley worker`: delivers webhooks in a process of its own until SIGTERM/SIGINT. */
export async function runWorkerUntilSignal(services: Services): Promise<string> {
  const worker = startDeliveryWorker(services);
  services.deps.log.info({ id: worker.id }, 'webhook worker running');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  await worker.stop();
  return 'webhook worker stopped';
}
