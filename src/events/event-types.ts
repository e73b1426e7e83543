/** The event catalogue of docs/api/webhooks.md. */
export const EVENT_TYPES = [
  'message.incoming',
  'message.outgoing',
  'message.status',
  'lead.created',
  'lead.changed',
  'lead.changed.status',
  'customer.created',
  'customer.changed',
  'customer.merged',
  'integration.created',
  'integration.deleted',
  'lead.note.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Events for Parley's own consumers only: no webhook receives them, and they are never replayed
 * (a reconnecting stream's catch-up skips them). Typing indicators of widget conversations travel
 * through the outbox like a reply does, so they reach whichever process holds the sockets:
 * `widget.typing` (an employee typing) goes to the visitor's sockets (visitor-push/),
 * `widget.visitor.typing` (the visitor typing) to the employees' live streams (realtime/) as
 * `{type:"typing"}`. `lead.idle` `{leadId, ruleId}` is the automation's idle sweep naming a lead that
 * went quiet for one rule (docs/api/automation.md). `integration.changed` `{integrationId}` says an
 * integration's status or health changed (domain/integrations/integration-health.ts): the employees'
 * live streams pass it on, catch-up included, so an open conversation shows its channel's trouble
 * (docs/api/webhooks.md "The realtime stream"). `lead.response.overdue` `{leadId, userId,
 * awaitingSince, targetMinutes}` is a lead passing the first-response target, which the employee
 * `userId` receives on the stream as a notification (realtime/). Retention prunes them with the
 * other events.
 */
export const INTERNAL_EVENT_TYPES = [
  'widget.typing',
  'widget.visitor.typing',
  'lead.idle',
  'integration.changed',
  'lead.response.overdue',
] as const;
export type InternalEventType = (typeof INTERNAL_EVENT_TYPES)[number];

export function isInternalEvent(type: string): boolean {
  return (INTERNAL_EVENT_TYPES as readonly string[]).includes(type);
}
