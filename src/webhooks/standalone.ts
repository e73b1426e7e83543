import type { Services } from '../services.js';
import { DeliveryWorker } from './delivery-worker.js';

/** Starts this process's webhook delivery worker and registers it with the services. */
export function startDeliveryWorker(services: Services): DeliveryWorker {
  const worker = new DeliveryWorker(services.deps);
  worker.start();
  services.workers.push(worker);
  return worker;
}
