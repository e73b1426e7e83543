import type { Executor } from '../../db/database.js';
import type { IntegrationRow, MessageRow, SourceRow } from '../../db/schema.js';
import { recordEvent } from '../../events/outbox.js';
import type { Deps } from '../context.js';
import { presentHistoryMessage, type DeliveryError, type DeliveryStatus, type IntegrationPart } from '../conversations/history-message.js';
import {
  advanceDeliveryStatus,
  holdDeliveryStatus,
  outgoingExists,
  outgoingMessage,
  outgoingUpTo,
  sourceOf,
  takeHeldDeliveryStatuses,
} from './delivery-status.repo.js';

export interface DeliveryReport {
  /** The provider's id of the outgoing message. */
  externalId: string;
  status: DeliveryStatus;
  error?: DeliveryError;
}

/**
 * Delivery reports of channels that send them (WhatsApp Cloud API statuses): the message's status
 * moves forward only, and each move records `message.status` in the same transaction. That event
 * reaches only webhooks that name it in their `events` (docs/api/webhooks.md) and the agents'
 * realtime stream. A report that comes before its message is stored is held and applied when the
 * message is (see {@link applyHeldStatuses}).
 */
export class DeliveryStatusService {
  constructor(private readonly deps: Deps) {}

  /**
   * A watermark report (Messenger reads and deliveries): every outgoing message of the channel sent
   * at or before `watermark` moves to `status`. Answers how many moved.
   */
  async recordUpTo(integration: IntegrationRow, channelExternalId: string, watermark: number, status: DeliveryStatus): Promise<number> {
    const ids = await outgoingUpTo(this.deps.db.kysely, integration.id, channelExternalId, watermark, status);
    let moved = 0;
    for (const externalId of ids) if (await this.record(integration, { externalId, status })) moved++;
    return moved;
  }

  /** True when the report moved the message; false for unknown ids, repeats and steps backwards. */
  async record(integration: IntegrationRow, report: DeliveryReport): Promise<boolean> {
    const now = this.deps.clock.now();
    const error = report.status === 'failed' && report.error ? JSON.stringify(report.error) : null;
    const db = this.deps.db.kysely;
    const outcome = await db.transaction().execute(async (trx) => {
      const message = await advanceDeliveryStatus(trx, integration.id, report.externalId, report.status, error);
      if (message) {
        await recordStatusEvent(trx, integration, message, await sourceOf(trx, message), now);
        return 'moved';
      }
      if (await outgoingExists(trx, integration.id, report.externalId)) return 'unchanged';
      await holdDeliveryStatus(trx, integration.id, report.externalId, report.status, error, now);
      return 'held';
    });
    if (outcome !== 'held') return outcome === 'moved';
    // The send may have committed meanwhile, after it looked for held reports: look once more.
    return db.transaction().execute(async (trx) => {
      const message = await outgoingMessage(trx, integration.id, report.externalId);
      const moved = message && (await applyHeldStatuses(trx, integration, message));
      if (moved) await recordStatusEvent(trx, integration, moved, await sourceOf(trx, moved), now);
      return moved !== undefined;
    });
  }
}

/** Applies the reports held for a message just stored; answers the moved row, or undefined. */
export async function applyHeldStatuses(
  trx: Executor,
  integration: Pick<IntegrationRow, 'id'>,
  message: MessageRow,
): Promise<MessageRow | undefined> {
  if (message.external_id === null || message.incoming) return undefined;
  let moved: MessageRow | undefined;
  for (const held of await takeHeldDeliveryStatuses(trx, integration.id, message.external_id)) {
    moved = (await advanceDeliveryStatus(trx, integration.id, message.external_id, held.status, held.error)) ?? moved;
  }
  return moved;
}

/** `message.status` for a message whose status moved, in the caller's transaction. */
export async function recordStatusEvent(
  trx: Executor,
  integration: IntegrationPart & Pick<IntegrationRow, 'account_id'>,
  message: MessageRow,
  source: SourceRow,
  now: number,
): Promise<void> {
  const history = presentHistoryMessage(message, source, integration, undefined);
  await recordEvent(
    trx,
    {
      accountId: integration.account_id,
      type: 'message.status',
      leadId: message.lead_id,
      payload: {
        leadId: message.lead_id,
        messageId: String(message.id),
        status: history.status,
        ...(history.error ? { error: history.error } : {}),
        message: history,
      },
    },
    now,
  );
}
