import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { onOutbox } from '../src/webhooks/wakeup.js';
import { OUTBOX_CHANNEL, recordEvent } from '../src/events/outbox.js';
import { createTestDatabase, DIALECT, type TestDatabase } from './helpers/database.js';

const quiet = { info() {}, warn() {}, error() {}, debug() {} };
let t: TestDatabase;
let accountId: number;
beforeAll(async () => {
  t = await createTestDatabase();
  accountId = (await t.db.kysely.insertInto('accounts').values({ name: 'a', plan: '{}', created_at: 0 }).returning('id').executeTakeFirstOrThrow()).id;
});
afterAll(() => t.drop());

/** Resolves once `check` holds, poking meanwhile; rejects after `ms` (a bound, not a sleep: it ends as soon as the wake comes). */
function waitFor(check: () => boolean, poke: () => Promise<void>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const tick = async () => {
      if (check()) return resolve();
      if (Date.now() > deadline) return reject(new Error('no wake-up'));
      await poke();
      setImmediate(() => void tick());
    };
    void tick();
  });
}

describe('outbox wake-ups', () => {
  it('wakes the worker of this process when an event is recorded', async () => {
    let wakes = 0;
    const stop = onOutbox(() => wakes++, { log: quiet });
    try {
      await t.db.kysely.transaction().execute((trx) => recordEvent(trx, { accountId, type: 'customer.changed', payload: {} }, 0));
      expect(wakes).toBeGreaterThan(0);
    } finally {
      await stop();
    }
  });

  if (DIALECT === 'postgres') {
    it('wakes on NOTIFY from another process (LISTEN on PostgreSQL), without any in-process signal', async () => {
      let wakes = 0;
      const stop = onOutbox(() => wakes++, { pgUrl: t.url, log: quiet });
      try {
        // Another connection stands for another Parley process; notify until the listener is set up.
        await waitFor(
          () => wakes > 0,
          async () => {
            await sql`select pg_notify(${OUTBOX_CHANNEL}, '1')`.execute(t.db.kysely);
          },
        );
        expect(wakes).toBeGreaterThan(0);
      } finally {
        await stop();
      }
    });
  }
});
