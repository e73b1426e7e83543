import { Type } from 'typebox';
import type { DeliveryView, WebhookRecord } from '../../domain/webhooks/webhooks.types.js';
import { Id } from '../schemas/common.js';

/** docs/api/webhooks.md webhook record; the same on every version. */
export const WebhookRecordSchema = Type.Object(
  {
    id: Id,
    url: Type.String(),
    name: Type.String(),
    status: Type.Integer({ description: '1 active, 0 disabled' }),
    events: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'Event types received; null = all' }),
    secret: Type.String({ description: 'whsec_<base64>: Standard Webhooks signing secret' }),
  },
  { title: 'Webhook', description: 'Webhook record' },
);

const AttemptSchema = Type.Object({
  at: Type.Integer({ description: 'Unix ms' }),
  statusCode: Type.Union([Type.Integer(), Type.Null()]),
  durationMs: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
});

export const DeliverySchema = Type.Object(
  {
    id: Id,
    eventId: Id,
    type: Type.String(),
    leadId: Type.Union([Type.Integer(), Type.Null()]),
    webhookMessageId: Type.String({ description: 'The webhook-id header, stable across retries' }),
    status: Type.String({ description: 'pending, delivered or dead' }),
    attempts: Type.Integer(),
    nextAttemptAt: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, while pending' }),
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    lastError: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.Integer({ description: 'Unix ms' }),
    deliveredAt: Type.Union([Type.Integer(), Type.Null()]),
    log: Type.Array(AttemptSchema, { description: 'Every attempt, oldest first' }),
  },
  { title: 'WebhookDelivery', description: 'Webhook delivery' },
);

export const serializeWebhook = (r: WebhookRecord): WebhookRecord => r;
export const serializeDelivery = (d: DeliveryView): DeliveryView => d;
