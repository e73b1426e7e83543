import { isPostgresUrl } from '../config.js';
import type { Deps } from '../domain/context.js';
import type { DeviceRow, UserRow } from '../db/schema.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { canSeeLeadRow, scopeOf } from '../domain/policy/policy.js';
import { connectedUsers } from '../domain/presence/presence.js';
import { claimPushSlot, deleteDevice, pushPreviews } from '../domain/devices/devices.repo.js';
import { onOutbox } from '../events/wakeup.js';
import * as repo from './push.repo.js';
import { sendWebPush, type PushOutcome } from './web-push-sender.js';
import type { FcmSender } from './fcm-sender.js';
import type { VapidKeys } from './vapid.js';

/** One notification per employee and lead per minute at most. */
export const PUSH_INTERVAL_MS = 60_000;
export const PREVIEW_CHARS = 100;
const BATCH = 500;
const GAP_WAIT_MS = 10_000;
/**
 * Wake-ups closer together than this share one read of the outbox. Every process runs this worker
 * and is woken by every commit of every process; read at each wake, the events of a busy inbox cost
 * each process two statements per handful of messages (docs/performance.md). A notification for an employee who is away can wait a quarter of a second.
 */
export const WAKE_GAP_MS = 250;

export interface PushNotification {
  title: string;
  body: string;
  leadId: number;
  url: string;
}

/**
 * Push notifications, a consumer of committed outbox events (like the realtime stream, it tails
 * `events` by id after commit; nothing calls it from services). For each `message.incoming` it
 * finds the employees to tell: the one responsible for the lead, or for an unassigned inbox lead
 * every employee who sees such leads — always through the visibility rule — and keeps those with
 * no realtime connection open in any process. Each gets at most one push per lead per minute
 * (claimed in the database, so several processes running this worker push once), on every device.
 * A subscription the push service calls gone (404/410) is removed.
 */
export class PushWorker implements BackgroundWorker {
  readonly name = 'push';
  private cursor = 0;
  private readonly seen = new Set<number>();
  private gapSince: number | undefined;
  private started = false;
  private stopped = false;
  private current: Promise<void> | undefined;
  private again = false;
  private unsubscribe: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The read a wake-up scheduled, and when the last one began (performance.now()). */
  private wakeTimer: NodeJS.Timeout | undefined;
  private lastWake = -Infinity;
  /** The last read found no push device at all (see `wake`). */
  private noDevices = false;

  constructor(
    private readonly deps: Deps,
    private readonly senders: { vapid: VapidKeys; fcm?: FcmSender },
  ) {}

  /** Begins with what is committed from now on; woken by the outbox nudge and a poll. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.cursor = await repo.maxEventId(this.deps.db.kysely);
    const wake = () => this.wake();
    const pgUrl = isPostgresUrl(this.deps.config.databaseUrl) ? this.deps.config.databaseUrl : undefined;
    this.unsubscribe = onOutbox(wake, { pgUrl, log: this.deps.log });
    this.timer = setInterval(() => this.wake(true), this.deps.config.eventsPollMs);
    this.timer.unref();
  }

  /** A read at once, or WAKE_GAP_MS after the last one began, whichever is later. */
  private wake(timed = false): void {
    if (this.wakeTimer || this.stopped) return;
    // Nobody had a device at the last read: the next is the poll's, or a nudge's a poll interval later.
    if (!timed && this.noDevices && performance.now() - this.lastWake < this.deps.config.eventsPollMs) return;
    const wait = Math.max(0, this.lastWake + WAKE_GAP_MS - performance.now());
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.lastWake = performance.now();
      void this.poll().catch((err: unknown) => this.deps.log.warn({ err }, 'push poll failed'));
    }, wait);
    this.wakeTimer.unref();
  }

  /** Handles what was committed since the last look; resolves when done (tests await it). */
  poll(): Promise<void> {
    if (this.current) {
      this.again = true;
      return this.current;
    }
    this.current = this.run().finally(() => {
      this.current = undefined;
    });
    return this.current;
  }

  healthy(): boolean {
    return !this.stopped;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.wakeTimer);
    await this.unsubscribe?.();
    await this.current;
  }

  private async run(): Promise<void> {
    do {
      this.again = false;
      // No device anywhere: nobody to push to for any event so far (every process would read them all).
      const idleTo = await repo.newestWithoutDevices(this.deps.db.kysely);
      this.noDevices = idleTo !== undefined;
      if (idleTo !== undefined) {
        this.cursor = Math.max(this.cursor, idleTo);
        this.seen.clear();
        this.gapSince = undefined;
        continue;
      }
      const rows = await repo.eventsAfter(this.deps.db.kysely, { cursor: this.cursor, limit: BATCH });
      const fresh = rows.filter((r) => !this.seen.has(r.id));
      for (const r of fresh) this.seen.add(r.id);
      this.advance();
      // An account's devices are read once per batch of events, and an account without any costs
      // nothing more: every process runs this worker and reads every event, so each look-up per
      // event was made once per process (with two processes, incoming messages fell to 0.7 of one
      // process; docs/performance.md).
      const devicesOf = new Map<number, repo.DeviceWithUser[]>();
      for (const row of fresh) {
        if (row.type !== 'message.incoming' || row.lead_id === null || row.payload === null) continue;
        try {
          let devices = devicesOf.get(row.account_id);
          if (!devices) {
            devices = await repo.devicesWithUsers(this.deps.db.kysely, row.account_id);
            devicesOf.set(row.account_id, devices);
          }
          if (!devices.length) continue;
          await this.notify(row.lead_id, JSON.parse(row.payload) as IncomingPayload, devices);
        } catch (err) {
          this.deps.log.warn({ err, eventId: row.id }, 'push failed');
        }
      }
      if (rows.length === BATCH && fresh.length) this.again = true;
    } while (this.again && !this.stopped);
  }

  /** Contiguous ids move the cursor; a hole (a PostgreSQL transaction committing late) is waited for a while. */
  private advance(): void {
    while (this.seen.has(this.cursor + 1)) this.seen.delete(++this.cursor);
    if (!this.seen.size) {
      this.gapSince = undefined;
      return;
    }
    const now = this.deps.clock.now();
    this.gapSince ??= now;
    if (now - this.gapSince >= GAP_WAIT_MS) {
      this.cursor = Math.min(...this.seen) - 1;
      this.gapSince = undefined;
      this.advance();
    }
  }

  /** `devices`: every device of the event's account (the lead's), with its employee. */
  private async notify(leadId: number, payload: IncomingPayload, devices: repo.DeviceWithUser[]): Promise<void> {
    const db = this.deps.db.kysely;
    const lead = await repo.leadForPush(db, leadId);
    if (!lead) return;
    const byUser = new Map<number, { user: UserRow; devices: DeviceRow[] }>();
    for (const { device, user } of devices) {
      const entry = byUser.get(user.id) ?? { user, devices: [] };
      entry.devices.push(device);
      byUser.set(user.id, entry);
    }
    const targets: Array<{ user: UserRow; devices: DeviceRow[] }> = [];
    for (const entry of byUser.values()) {
      const responsible = lead.user_id === null ? lead.status_type === 'inbox' : lead.user_id === entry.user.id;
      if (!responsible || !entry.user.confirmed) continue;
      const scope = await scopeOf(db, {
        accountId: lead.account_id,
        userId: entry.user.id,
        role: entry.user.role,
        typ: 'access',
        user: entry.user,
      });
      if (canSeeLeadRow(scope, lead)) targets.push(entry);
    }
    if (!targets.length) return;
    const present = await connectedUsers(
      this.deps,
      targets.map((t) => t.user.id),
    );
    const previews = await pushPreviews(db, lead.account_id);
    const text = payload.message?.message?.text ?? '';
    const notification: PushNotification = {
      title: lead.customer_name || 'New message',
      body: previews ? [...text].slice(0, PREVIEW_CHARS).join('') : '',
      leadId: lead.id,
      url: `/leads/${lead.id}`,
    };
    for (const { user, devices } of targets) {
      if (present.has(user.id)) continue;
      if (!(await claimPushSlot(db, user.id, lead.id, this.deps.clock.now(), PUSH_INTERVAL_MS))) continue;
      for (const device of devices) await this.deliver(device, notification);
    }
  }

  private async deliver(device: DeviceRow, n: PushNotification): Promise<void> {
    let outcome: PushOutcome;
    try {
      if (device.platform === 'web') {
        const keys = JSON.parse(device.keys ?? '{}') as { p256dh: string; auth: string };
        outcome = await sendWebPush(
          { endpoint: device.address, keys },
          JSON.stringify(n),
          this.senders.vapid,
          this.deps.config.webhookAllowPrivate,
        );
      } else {
        if (!this.senders.fcm) return;
        outcome = await this.senders.fcm.send(device.address, {
          title: n.title,
          body: n.body,
          data: { leadId: String(n.leadId), url: n.url },
        });
      }
    } catch (err) {
      this.deps.log.warn({ err, deviceId: device.id }, 'push delivery failed');
      return;
    }
    if (outcome === 'gone') {
      await deleteDevice(this.deps.db.kysely, device.id);
      this.deps.log.info({ deviceId: device.id }, 'push subscription gone: device removed');
    } else if (outcome === 'failed') {
      this.deps.log.warn({ deviceId: device.id }, 'push service refused the notification');
    }
  }
}

interface IncomingPayload {
  message?: { message?: { text?: string } };
}
