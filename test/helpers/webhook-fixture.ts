import type { IntegrationRow } from '../../src/db/schema.js';
import { DeliveryWorker } from '../../src/webhooks/delivery-worker.js';
import { createIntegration } from './fixtures.js';
import type { Harness, SignedUp } from './harness.js';
import { Receiver } from './webhook-receiver.js';

/**
 * What the webhook delivery tests share: local receivers, delivery workers over the harness's
 * services (config overrides per worker), an account with a widget integration, and `stopAll`
 * for afterEach. `harness` is read when used (the harness is made in beforeAll).
 */
export function webhookFixture(harness: () => Harness) {
  const receivers: Receiver[] = [];
  const workers: DeliveryWorker[] = [];
  return {
    async receiver(): Promise<Receiver> {
      const r = await new Receiver().start();
      receivers.push(r);
      return r;
    },
    worker(over: Partial<Harness['config']> = {}, id?: string): DeliveryWorker {
      const h = harness();
      const w = new DeliveryWorker({ ...h.services.deps, config: { ...h.config, ...over } }, { id });
      workers.push(w);
      return w;
    },
    async account(): Promise<{ owner: SignedUp; integration: IntegrationRow }> {
      const h = harness();
      const owner = await h.signUp();
      const id = await createIntegration(h, owner.accountId, 'widget');
      const integration = await h.database.db.kysely.selectFrom('integrations').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      return { owner, integration };
    },
    async stopAll(): Promise<void> {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      await Promise.all(receivers.splice(0).map((r) => r.close()));
    },
  };
}
