import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventsRecorded, recordEvent } from '../src/events/outbox.js';
import { OutboxTail } from '../src/events/outbox-tail.js';
import type { Deps } from '../src/domain/context.js';
import { createTestDatabase, insertAccount, quietLog, type TestDatabase } from './helpers/database.js';
import { statementCounter } from './helpers/statements.js';

let t: TestDatabase;
let accountId: number;
beforeAll(async () => {
  t = await createTestDatabase();
  accountId = await insertAccount(t);
});
afterAll(() => t.drop());

/** Turns of the event loop until `ready` (a bound, not a sleep: it ends as soon as `ready` holds). */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !ready(); i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('OutboxTail without anybody to serve', () => {
  it('follows the newest event on a poll, and on nudges at most once a poll interval', async () => {
    // The nudges' follow-ups (events/wakeup.ts) and the poll timer only when the test moves them.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const { counter, statements, tables, reset } = statementCounter();
    // A poll interval no test waits out: the nudges below all fall within one.
    const deps = {
      db: { ...t.db, kysely: t.db.kysely.withPlugin(counter) },
      config: { eventsPollMs: 3_600_000, databaseUrl: undefined },
      log: quietLog,
    } as unknown as Deps;
    let served = 0;
    const tail = new OutboxTail(deps, { name: 'idle', active: () => false, handle: async () => void served++ });
    await tail.ensureStarted();
    try {
      const record = () =>
        t.db.kysely.transaction().execute((trx) => recordEvent(trx, { accountId, type: 'customer.changed', payload: {} }, 0));
      // The first nudge follows the newest id; those after it, within the interval, read nothing.
      reset();
      await record();
      await until(() => statements() === 1);
      expect(tables()).toHaveLength(1);
      const cursor = tail.cursor;
      // Nudges (this process's events, another's NOTIFY) and their follow-ups start no read.
      for (let i = 0; i < 5; i++) eventsRecorded([cursor + 1 + i], [0]);
      await record();
      vi.advanceTimersByTime(25);
      expect(tables()).toHaveLength(1);
      expect(tail.cursor).toBe(cursor);
      // A poll asked for (a subscriber about to be served) brings the cursor up to what is committed.
      await tail.poll();
      expect(statements()).toBe(2);
      expect(tail.cursor).toBe(cursor + 1);
      expect(served).toBe(0);
    } finally {
      await tail.stop();
      vi.useRealTimers();
    }
  });
});
