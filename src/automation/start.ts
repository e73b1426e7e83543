import type { Services } from '../services.js';
import { AutomationWorker } from './automation-worker.js';

/** This process's automation consumer; rule replies go out through messaging's send. */
export function createAutomationWorker(services: Services): AutomationWorker {
  return new AutomationWorker(services.deps, (auth, leadId, input) =>
    services.messaging.send(auth, leadId, input, { honourSaId: false, byAutomation: true }),
  );
}
