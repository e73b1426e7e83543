/**
 * How an event reaches a consumer registered through an API version (docs/api/versions.md and
 * docs/api/webhooks.md): the only version differences of the events themselves. They live with
 * the outbox, not in the REST face's trait table (api/versions.ts), so that the outbox and its
 * consumers (webhook fan-out and delivery) do not depend on the REST face. A version Parley does
 * not know reads as the newest.
 */
export interface EventVersionTraits {
  /** Event payloads carry `accountId`. */
  accountId: boolean;
  /** Webhooks of this version receive `message.outgoing`. */
  outgoingMessage: boolean;
}

export const EVENT_VERSION_TRAITS: Readonly<Record<'v1.1' | 'v1.2' | 'v1.3', EventVersionTraits>> = {
  'v1.1': { accountId: false, outgoingMessage: false },
  'v1.2': { accountId: true, outgoingMessage: true },
  'v1.3': { accountId: true, outgoingMessage: true },
};

export function eventTraitsOf(apiVersion: string): EventVersionTraits {
  return Object.hasOwn(EVENT_VERSION_TRAITS, apiVersion)
    ? EVENT_VERSION_TRAITS[apiVersion as keyof typeof EVENT_VERSION_TRAITS]
    : EVENT_VERSION_TRAITS['v1.3'];
}

/**
 * The stored (v1.3) payload as a webhook sends it, in the shape of the version the webhook was
 * registered through (docs/api/webhooks.md): a message's `datetime` as an ISO 8601 string (the
 * stored payload, which the realtime stream also reads, and history answers keep Unix ms), and a
 * `sender.id` only when it is an integer (events stored before it always was).
 */
export function eventBodyFor(apiVersion: string, payloadJson: string): string {
  const keepAccountId = eventTraitsOf(apiVersion).accountId;
  // Most events carry no message: they go out as stored (v1.2+), without a parse.
  if (keepAccountId && !payloadJson.includes('"message"')) return payloadJson;
  const body = JSON.parse(payloadJson) as Record<string, unknown>;
  if (!keepAccountId) delete body.accountId;
  if (isObject(body.message)) body.message = messageAsSent(body.message);
  return JSON.stringify(body);
}

/** A History message as webhooks send it. */
function messageAsSent(message: Record<string, unknown>): Record<string, unknown> {
  const out = { ...message };
  if (typeof out.datetime === 'number') out.datetime = new Date(out.datetime).toISOString();
  if (isObject(out.sender)) out.sender = senderWithIntegerId(out.sender);
  if (isObject(out.replyTo) && isObject(out.replyTo.sender))
    out.replyTo = { ...out.replyTo, sender: senderWithIntegerId(out.replyTo.sender) };
  return out;
}

function senderWithIntegerId(sender: Record<string, unknown>): Record<string, unknown> {
  if (sender.id === undefined || Number.isSafeInteger(sender.id)) return sender;
  const { id: _dropped, ...rest } = sender;
  return rest;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
