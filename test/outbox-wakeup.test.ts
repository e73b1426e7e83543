import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
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

  it('wakes again a moment later (for readers on other connections) unless followUp is off', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const wakes = { followUp: 0, once: 0 };
    const stops = [onOutbox(() => wakes.followUp++, { log: quiet }), onOutbox(() => wakes.once++, { log: quiet, followUp: false })];
    try {
      await t.db.kysely.transaction().execute((trx) => recordEvent(trx, { accountId, type: 'customer.changed', payload: {} }, 0));
      expect(wakes).toEqual({ followUp: 1, once: 1 });
      vi.advanceTimersByTime(25);
      expect(wakes).toEqual({ followUp: 2, once: 1 });
    } finally {
      for (const stop of stops) await stop();
      vi.useRealTimers();
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
