import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { sql, type KyselyPlugin } from 'kysely';
import { onOutbox } from '../src/events/wakeup.js';
import pg from 'pg';
import { DELIVERIES_CHANNEL, eventsRecorded, OUTBOX_CHANNEL, outboxSignal, recordEvent } from '../src/events/outbox.js';
import { OutboxNotifier } from '../src/events/outbox-notifier.js';
import { createTestDatabase, insertAccount, quietLog, DIALECT, type TestDatabase } from './helpers/database.js';
import { statementCounter } from './helpers/statements.js';

let t: TestDatabase;
let accountId: number;
beforeAll(async () => {
  t = await createTestDatabase();
  accountId = await insertAccount(t);
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

const currentSchema = async () => (await sql<{ s: string }>`select current_schema() as s`.execute(t.db.kysely)).rows[0]!.s;

describe('outbox wake-ups', () => {
  it('wakes the worker of this process when an event is recorded', async () => {
    let wakes = 0;
    const stop = onOutbox(() => wakes++, { log: quietLog });
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
    const stops = [onOutbox(() => wakes.followUp++, { log: quietLog }), onOutbox(() => wakes.once++, { log: quietLog, followUp: false })];
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

  it('wakes each reader once for events recorded together, and the webhook worker only when one of them made deliveries', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const wakes = { readers: 0, deliveries: 0 };
    const stops = [
      onOutbox(() => wakes.readers++, { log: quietLog }),
      onOutbox(() => wakes.deliveries++, { log: quietLog, deliveriesOnly: true, followUp: false }),
    ];
    try {
      // A batch of three events without deliveries: one wake, and one follow-up for the lot.
      eventsRecorded([7, 8, 9], [0, 0, 0]);
      expect(wakes).toEqual({ readers: 1, deliveries: 0 });
      vi.advanceTimersByTime(25);
      expect(wakes).toEqual({ readers: 2, deliveries: 0 });
      // One of them made deliveries: the webhook worker wakes, once.
      eventsRecorded([10, 11, 12], [0, 2, 0]);
      expect(wakes).toEqual({ readers: 3, deliveries: 1 });
      vi.advanceTimersByTime(25);
      expect(wakes).toEqual({ readers: 4, deliveries: 1 });
      eventsRecorded([], []);
      vi.advanceTimersByTime(25);
      expect(wakes).toEqual({ readers: 4, deliveries: 1 });
    } finally {
      for (const stop of stops) await stop();
      vi.useRealTimers();
    }
  });

  if (DIALECT === 'postgres') {
    it('notifies other processes outside the writing transactions: one NOTIFY for a burst; the workers only for deliveries', async () => {
      const listener = new pg.Client({ connectionString: t.url });
      await listener.connect();
      const heard: string[] = [];
      // Only this schema's: other test files (other schemas of the database) notify beside it.
      const schema = await currentSchema();
      listener.on('notification', (n) => {
        if (n.payload === schema) heard.push(n.channel);
      });
      await listener.query(`LISTEN ${OUTBOX_CHANNEL}; LISTEN ${DELIVERIES_CHANNEL}`);
      // The notifier's statements whose answer is back: it sets its next timer only then, which may
      // be after the listener heard its NOTIFY.
      const { counter, statements: answered } = statementCounter();
      const notifier = new OutboxNotifier(t.db.kysely.withPlugin(counter), quietLog);
      try {
        const notifies = async () => {
          const { rows } = await sql<{
            n: number;
          }>`select count(*)::int as n from pg_locks where locktype = 'object' and classid = 0 and objid = 0`.execute(t.db.kysely);
          return rows[0]!.n;
        };
        vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
        for (let i = 0; i < 20; i++) {
          await t.db.kysely.transaction().execute(async (trx) => {
            await recordEvent(trx, { accountId, type: 'customer.changed', payload: {} }, 0);
            // Nothing holds the server-wide notify lock for this transaction.
            expect(await notifies()).toBe(0);
          });
        }
        const tick = () => new Promise<void>((r) => setImmediate(r));
        // 5 ms after the burst began: one NOTIFY for all twenty.
        vi.advanceTimersByTime(5);
        await waitFor(() => heard.length === 1 && answered() === 1, tick);
        await tick();
        // And one more 25 ms later, for transactions that had not committed by the first.
        vi.advanceTimersByTime(25);
        await waitFor(() => heard.length === 2, tick);
        vi.advanceTimersByTime(1000);
        // No event made a webhook delivery: the delivery workers are not woken.
        expect(heard).toEqual([OUTBOX_CHANNEL, OUTBOX_CHANNEL]);
      } finally {
        vi.useRealTimers();
        await notifier.stop();
        await listener.end();
      }
    });

    it("wakes on its own schema's NOTIFY and not on another installation's in the same database", async () => {
      let wakes = 0;
      const stop = onOutbox(() => wakes++, { pgUrl: t.url, log: quietLog, followUp: false });
      const sender = new pg.Client({ connectionString: t.url });
      await sender.connect();
      try {
        const schema = await currentSchema();
        const notify = (payloads: string[]) =>
          sender.query(`select ${payloads.map((_, i) => `pg_notify('${OUTBOX_CHANNEL}', $${i + 1})`).join(', ')}`, payloads);
        const tick = () => new Promise<void>((r) => setImmediate(r));
        // Its LISTEN is made in the background: this schema's NOTIFYs until one wakes it.
        await waitFor(
          () => wakes > 0,
          async () => {
            await notify([schema]);
            await tick();
          },
        );
        // Ten of other schemas (distinct: PostgreSQL folds a transaction's equal NOTIFYs into one),
        // then one of this one, in one transaction: delivered together, in that order. Without the
        // schema check all eleven wake; with it, this schema's one (and at most a late one of the
        // loop above).
        const before = wakes;
        await notify([...Array.from({ length: 10 }, (_, i) => `another_installation_${i}`), schema]);
        await waitFor(() => wakes > before, tick);
        expect(wakes - before).toBeLessThanOrEqual(2);
      } finally {
        await sender.end();
        await stop();
      }
    });

    it('notifies at most once per 25 ms under steady events: events recorded while a NOTIFY is on its way wait for the next', async () => {
      // Each NOTIFY's statement is counted when it starts and when its answer is back, held until the gate opens.
      let started = 0;
      let answered = 0;
      let opened = false;
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const held: KyselyPlugin = {
        transformQuery: (args) => {
          started++;
          return args.node;
        },
        transformResult: async (args) => {
          await gate;
          answered++;
          return args.result;
        },
      };
      const notifier = new OutboxNotifier(t.db.kysely.withPlugin(held), quietLog);
      const turns = async () => {
        for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
      };
      // Once the gate is open: every NOTIFY that started has its answer back from PostgreSQL (a real
      // round trip, however long it takes), then the notifier has had its turns to set its next timer.
      const settle = async () => {
        await turns();
        const deadline = Date.now() + 5000;
        while (opened && answered < started && Date.now() < deadline) await new Promise<void>((r) => setImmediate(r));
        await turns();
      };
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        outboxSignal.emit('recorded', 1, 0);
        vi.advanceTimersByTime(5);
        await settle();
        expect(started).toBe(1);
        // An event while the first NOTIFY is on its way, then time passes: no second NOTIFY yet.
        outboxSignal.emit('recorded', 2, 0);
        vi.advanceTimersByTime(100);
        await settle();
        expect(started).toBe(1);
        // Once it is sent: the next 25 ms later, for the waiting event, and the cover after it.
        open();
        opened = true;
        await settle();
        expect(started).toBe(1);
        vi.advanceTimersByTime(25);
        await settle();
        expect(started).toBe(2);
        vi.advanceTimersByTime(25);
        await settle();
        expect(started).toBe(3);
        vi.advanceTimersByTime(1000);
        await settle();
        expect(started).toBe(3);
      } finally {
        vi.useRealTimers();
        await notifier.stop();
      }
    });

    describe('one chain of NOTIFYs for the processes on a database', () => {
      /** A notifier hearing parley_outbox, its NOTIFYs counted when they start and when answered. */
      const setUp = async () => {
        let started = 0;
        let answered = 0;
        const counted: KyselyPlugin = {
          transformQuery: (args) => {
            started++;
            return args.node;
          },
          transformResult: async (args) => {
            answered++;
            return args.result;
          },
        };
        const notifier = new OutboxNotifier(t.db.kysely.withPlugin(counted), quietLog, { listenUrl: t.url! });
        // A reader on the same LISTEN connection (one per process and channel): it hears a NOTIFY
        // when the notifier does. Another connection stands for another Parley process.
        let heard = 0;
        const stopReader = onOutbox(() => heard++, { pgUrl: t.url!, log: quietLog, followUp: false });
        const other = new pg.Client({ connectionString: t.url });
        await other.connect();
        const otherNotifies = () => other.query(`select pg_notify('${OUTBOX_CHANNEL}', current_schema())`);
        const tick = () => new Promise<void>((r) => setImmediate(r));
        await waitFor(
          () => heard > 0,
          async () => {
            await otherNotifies();
            await tick();
          },
        );
        const settle = async (check: () => boolean = () => answered === started) => {
          await waitFor(check, tick);
          for (let i = 0; i < 20; i++) await tick();
        };
        return {
          notifier,
          started: () => started,
          answered: () => answered,
          heard: () => heard,
          otherNotifies,
          settle,
          close: async () => {
            vi.useRealTimers();
            await notifier.stop();
            await stopReader();
            await other.end();
          },
        };
      };

      it("leaves its NOTIFY out when another process's came after its events were recorded, and still sends the cover after them", async () => {
        const s = await setUp();
        try {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
          outboxSignal.emit('recorded', 1, 0);
          const before = s.heard();
          await s.otherNotifies();
          await s.settle(() => s.heard() > before);
          vi.advanceTimersByTime(5);
          await s.settle();
          expect(s.started()).toBe(0);
          expect(s.notifier.skipped).toBe(1);
          // The cover 25 ms later is its own: its events had maybe not committed when the other's came.
          vi.advanceTimersByTime(25);
          await s.settle(() => s.started() === 1);
          vi.advanceTimersByTime(1000);
          await s.settle();
          expect(s.started()).toBe(1);
        } finally {
          await s.close();
        }
      });

      it('sends its NOTIFY when the one heard since its events were recorded was its own', async () => {
        const s = await setUp();
        try {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
          outboxSignal.emit('recorded', 1, 0);
          const before = s.heard();
          vi.advanceTimersByTime(5);
          // An event recorded while its NOTIFY is on the way, which its listener then hears.
          outboxSignal.emit('recorded', 2, 0);
          await s.settle(() => s.answered() === 1 && s.heard() > before);
          vi.advanceTimersByTime(25);
          await s.settle(() => s.started() === 2);
          expect(s.notifier.skipped).toBe(0);
        } finally {
          await s.close();
        }
      });

      it("sends its NOTIFY when the other process's came before its events were recorded", async () => {
        const s = await setUp();
        try {
          vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
          const before = s.heard();
          await s.otherNotifies();
          await s.settle(() => s.heard() > before);
          outboxSignal.emit('recorded', 1, 0);
          vi.advanceTimersByTime(5);
          await s.settle(() => s.started() === 1);
          expect(s.notifier.skipped).toBe(0);
        } finally {
          await s.close();
        }
      });
    });

    it('opens no LISTEN connection of its own: a process that only writes (the CLI) is not kept running', async () => {
      // The notifier's URL carries a name of its own, so this counts only a connection it opened.
      const name = `parley-notifier-${process.pid}`;
      const url = new URL(t.url!);
      url.searchParams.set('application_name', name);
      const notifier = new OutboxNotifier(t.db.kysely, quietLog, { listenUrl: url.toString() });
      // Another process's listener: it hears the notifier's NOTIFY, sent as without readers.
      const other = new pg.Client({ connectionString: t.url });
      await other.connect();
      let heard = 0;
      other.on('notification', () => heard++);
      await other.query(`LISTEN ${OUTBOX_CHANNEL}`);
      try {
        await waitFor(
          () => heard > 0,
          async () => {
            outboxSignal.emit('recorded', 1, 0);
            await new Promise<void>((r) => setImmediate(r));
          },
        );
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where application_name = ${name}`.execute(
          t.db.kysely,
        );
        expect(rows[0]!.n).toBe(0);
      } finally {
        await notifier.stop();
        await other.end();
      }
    });

    it('wakes on NOTIFY from another process (LISTEN on PostgreSQL), without any in-process signal', async () => {
      let wakes = 0;
      const stop = onOutbox(() => wakes++, { pgUrl: t.url, log: quietLog });
      try {
        // Another connection stands for another Parley process; notify until the listener is set up.
        await waitFor(
          () => wakes > 0,
          async () => {
            await sql`select pg_notify(${OUTBOX_CHANNEL}, current_schema())`.execute(t.db.kysely);
          },
        );
        expect(wakes).toBeGreaterThan(0);
      } finally {
        await stop();
      }
    });

    it("shares one LISTEN connection among a process's readers of a channel, and ends it with the last", async () => {
      // The readers' connections carry a name of their own, so this file counts only theirs.
      const name = `parley-wakeup-${process.pid}`;
      const url = new URL(t.url!);
      url.searchParams.set('application_name', name);
      const listening = async () =>
        (await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where application_name = ${name}`.execute(t.db.kysely))
          .rows[0]!.n;
      const wakes = [0, 0, 0];
      const stops = wakes.map((_, i) => onOutbox(() => wakes[i]!++, { pgUrl: url.toString(), log: quietLog, followUp: false }));
      const notify = async () => {
        await sql`select pg_notify(${OUTBOX_CHANNEL}, current_schema())`.execute(t.db.kysely);
        await new Promise<void>((r) => setImmediate(r));
      };
      try {
        await waitFor(() => wakes.every((w) => w > 0), notify);
        expect(await listening()).toBe(1);
        // One reader leaves: the others still wake, on the same connection.
        await stops.shift()!();
        const before = [wakes[1]!, wakes[2]!];
        await waitFor(() => wakes[1]! > before[0]! && wakes[2]! > before[1]!, notify);
        expect(await listening()).toBe(1);
      } finally {
        for (const stop of stops) await stop();
      }
      let left = await listening();
      for (const deadline = Date.now() + 5000; left > 0 && Date.now() < deadline; left = await listening()) {
        await new Promise<void>((r) => setImmediate(r));
      }
      expect(left).toBe(0);
    });
  }
});
