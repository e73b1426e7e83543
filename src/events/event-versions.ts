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

/** The stored (v1.3) payload in the shape of the version a consumer was registered through. */
export function eventBodyFor(apiVersion: string, payloadJson: string): string {
  if (eventTraitsOf(apiVersion).accountId) return payloadJson;
  const { accountId: _drop, ...rest } = JSON.parse(payloadJson) as Record<string, unknown>;
  return JSON.stringify(rest);
}
