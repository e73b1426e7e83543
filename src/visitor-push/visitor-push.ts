import type { EventRow } from '../db/schema.js';
import type { Deps } from '../domain/context.js';
import type { VisitorHub } from '../domain/widget/visitor-hub.js';
import { messagesByIds } from '../domain/widget/widget.repo.js';
import { presentVisitorMessage } from '../domain/widget/widget-conversation.js';
import type { BackgroundWorker } from '../domain/workers.js';
import { OutboxTail } from '../events/outbox-tail.js';

/** What this consumer reads of a `message.outgoing` payload (the v1.3 History message). */
interface OutgoingPayload {
  message?: { messageId?: string; sa?: { id?: number; type?: string }; source?: { id?: string; type?: string } };
}

interface TypingPayload {
  integrationId?: number;
  visitorId?: string;
  typing?: boolean;
}

/**
 * Pushes to the widget visitors' open sockets of this process what was committed in the outbox:
 * agents' replies (`message.outgoing` of a widget conversation) and typing indicators
 * (`widget.typing`), whatever process stored them. While no visitor is connected here, events are
 * not read (the tail only follows the newest id).
 */
export class VisitorPush implements BackgroundWorker {
  readonly name = 'visitor-push';
  private readonly tail: OutboxTail;

  constructor(
    private readonly deps: Deps,
    private readonly hub: VisitorHub,
    opts: { pgListenUrl?: string } = {},
  ) {
    this.tail = new OutboxTail(deps, { name: this.name, active: () => hub.size > 0, handle: (rows) => this.push(rows) }, opts);
  }

  /** Starts reading the outbox (once); call it when a visitor connects. */
  start(): Promise<void> {
    return this.tail.ensureStarted();
  }

  /** Reads and pushes what was committed since the last look (tests; otherwise woken by the outbox). */
  poll(): Promise<void> {
    return this.tail.poll();
  }

  healthy(): boolean {
    return this.tail.running;
  }

  stop(): Promise<void> {
    return this.tail.stop();
  }

  private async push(rows: EventRow[]): Promise<void> {
    const replies: Array<{ integrationId: number; visitorId: string; messageId: number }> = [];
    for (const row of rows) {
      if (row.type === 'widget.typing') {
        const p = JSON.parse(row.payload) as TypingPayload;
        if (typeof p.integrationId === 'number' && typeof p.visitorId === 'string') {
          this.hub.push(p.integrationId, p.visitorId, { type: 'typing', typing: p.typing !== false });
        }
      } else if (row.type === 'message.outgoing') {
        const m = (JSON.parse(row.payload) as OutgoingPayload).message;
        const integrationId = m?.sa?.id;
        const visitorId = m?.source?.id;
        if (m?.sa?.type !== 'widget' || m.source?.type !== 'message' || typeof integrationId !== 'number' || typeof visitorId !== 'string')
          continue;
        if (!this.hub.has(integrationId, visitorId)) continue;
        replies.push({ integrationId, visitorId, messageId: Number(m.messageId) });
      }
    }
    if (!replies.length) return;
    // The visitor sees a reply as its history shows it: read the stored rows, in event order.
    const stored = new Map(
      (
        await messagesByIds(
          this.deps.db.kysely,
          replies.map((r) => r.messageId),
        )
      ).map((m) => [m.id, m]),
    );
    for (const reply of replies) {
      const message = stored.get(reply.messageId);
      if (message) this.hub.push(reply.integrationId, reply.visitorId, { type: 'message', message: presentVisitorMessage(message) });
    }
  }
}
