import type { EventType } from '../../events/event-types.js';

/** docs/api/webhooks.md webhook record. */
export interface WebhookRecord {
  id: number;
  url: string;
  name: string;
  status: number;
  events: EventType[] | null;
  secret: string;
}

export interface NewWebhookInput {
  url: string;
  name?: string;
  events?: string[] | null;
}

export interface WebhookPatch {
  url?: string;
  name?: string;
  status?: number;
  events?: string[] | null;
}

export interface DeliveryAttemptView {
  at: number;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface DeliveryView {
  id: number;
  eventId: number;
  type: string;
  leadId: number | null;
  webhookMessageId: string;
  status: string;
  attempts: number;
  nextAttemptAt: number | null;
  lastStatusCode: number | null;
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
  log: DeliveryAttemptView[];
}

export const URL_MAX_LENGTH = 2000;
export const DELIVERY_LIST_DEFAULT = 50;
export const DELIVERY_LIST_MAX = 200;
