import { afterAll, beforeAll, expect, it } from 'vitest';
import type { IntegrationRow } from '../src/db/schema.js';
import { createPushWorker } from '../src/push/start.js';
import { createIntegrationRow } from './helpers/fixtures.js';
import { createHarness, type Harness, type SignedUp } from './helpers/harness.js';
import { statementCounter } from './helpers/statements.js';

/**
 * Push with nobody to push to: every process runs the push worker for every process's events
 * (docs/architecture.md, the outbox), so while no employee of the installation has a device it
 * passes the events over unread, and once one has, it reads those recorded after its last check.
 */
let h: Harness;
let owner: SignedUp;
let integration: IntegrationRow;
let seq = 0;

beforeAll(async () => {
  h = await createHarness();
  owner = await h.signUp();
  integration = await createIntegrationRow(h, owner.accountId);
});

afterAll(async () => {
  await h.close();
});

const hello = () =>
  h.services.ingest.ingest(integration, {
    externalId: `push-idle-${++seq}`,
    datetime: h.clock.now(),
    sender: { socialId: `push-idle-${seq}`, name: `Customer ${seq}` },
    channel: { externalId: `push-idle-chat-${seq}`, type: 'message' },
    text: 'hello',
  });

it('with no device anywhere reads no event; with one, reads the events after its last check', async () => {
  const { counter, statements, reset } = statementCounter();
  const kysely = h.services.deps.db.kysely.withPlugin(counter);
  const worker = createPushWorker({ ...h.services, deps: { ...h.services.deps, db: { ...h.services.deps.db, kysely } } });
  // Started and stopped: its cursor is at the newest event and nothing wakes it.
  await worker.start();
  await worker.stop();
  for (let i = 0; i < 5; i++) await hello();
  reset();
  await worker.poll();
  // One statement: the newest event id and whether any device exists. The events are not read.
  expect(statements()).toBe(1);

  await h.database.db.kysely
    .insertInto('devices')
    .values({
      account_id: owner.accountId,
      user_id: owner.userId,
      platform: 'fcm',
      address: 'push-idle-token',
      keys: null,
      name: 'Phone',
      created_at: h.clock.now(),
    })
    .execute();
  await hello();
  reset();
  await worker.poll();
  // The check, then the event after it and the account's devices: the worker reads again.
  expect(statements()).toBeGreaterThanOrEqual(3);
});
