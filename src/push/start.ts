import type { Services } from '../services.js';
import { FcmSender, parseServiceAccount } from './fcm-sender.js';
import { PushWorker } from './push-worker.js';
import { loadOrCreateVapidKeys } from './vapid.js';

/** Builds this process's push worker from the configuration (VAPID keys; FCM when credentials are set). */
export function createPushWorker(services: Services): PushWorker {
  const { config, clock } = services.deps;
  const fcm = config.fcmCredentials ? new FcmSender(parseServiceAccount(config.fcmCredentials), config.fcmApiUrl, clock) : undefined;
  return new PushWorker(services.deps, { vapid: loadOrCreateVapidKeys(config), fcm });
}

/** Starts the push worker and registers it with the services (stopped with the others). */
export function startPushWorker(services: Services): PushWorker {
  const worker = createPushWorker(services);
  void worker.start().catch((err: unknown) => services.deps.log.error({ err }, 'push worker did not start'));
  services.workers.push(worker);
  return worker;
}
