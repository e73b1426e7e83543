/**
 * The API versions and every difference between them (docs/api/versions.md), in one table. Code that
 * needs a version difference reads a trait here or picks a serializer by version; it never tests
 * the version string itself. The differences of the events themselves (`accountId` in payloads,
 * `message.outgoing` for v1.1 webhooks) are in events/event-versions.ts, beside the outbox.
 */
export const API_VERSIONS = ['v1.1', 'v1.2', 'v1.3'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

export interface VersionTraits {
  /** `legacy`: `{statusCode, message}`; `current`: `{error, code, details?}`. */
  errorFormat: 'legacy' | 'current';
  /** application/x-www-form-urlencoded bodies accepted (elsewhere 415). */
  formBodies: boolean;
  /** Status for a path parameter that fails its schema (a non-integer id). */
  invalidPathParamStatus: 400 | 404;
  /** `limit` above the maximum is clamped (true) or refused with 400 (false). */
  clampLimit: boolean;
  /** Employee objects carry `allowedUsers` and `metadata`. */
  employeeExtras: boolean;
  /** Search results say `leads`/`leadId` with ms timestamps, or `deals`/`dealId` with seconds. */
  searchNaming: 'deals' | 'leads';
  /** Upload answer nests the media object twice. */
  uploadNestedTwice: boolean;
  /** Webhooks an account may register through this version. */
  webhookLimit: number;
  /** Sources carry `identifier`. */
  sourceIdentifier: boolean;
  /** `saId` in a send body is honoured (v1.1 ignores it). */
  sendSaId: boolean;
  /** History messages carry the delivery `status` (and `error`) channels report. */
  deliveryStatus: boolean;
  /** The owner sees `webhook` {url, verifyToken} on integrations whose provider needs them pasted (Meta). */
  integrationWebhook: boolean;
  /** Integrations carry `health` (activity, last error, delivery mode: docs/api/integrations.md "Health"). */
  integrationHealth: boolean;
  /** A send may answer a comment privately (`private: true`, docs/api/messaging.md); older versions drop the field. */
  privateReplies: boolean;
}

export const VERSION_TRAITS: Record<ApiVersion, VersionTraits> = {
  'v1.1': {
    errorFormat: 'legacy',
    formBodies: true,
    invalidPathParamStatus: 404,
    clampLimit: true,
    employeeExtras: false,
    searchNaming: 'deals',
    uploadNestedTwice: true,
    webhookLimit: 1,
    sourceIdentifier: false,
    sendSaId: false,
    deliveryStatus: false,
    integrationWebhook: false,
    integrationHealth: false,
    privateReplies: false,
  },
  'v1.2': {
    errorFormat: 'current',
    formBodies: false,
    invalidPathParamStatus: 404,
    clampLimit: false,
    employeeExtras: false,
    searchNaming: 'deals',
    uploadNestedTwice: false,
    webhookLimit: 10,
    sourceIdentifier: true,
    sendSaId: true,
    deliveryStatus: false,
    integrationWebhook: false,
    integrationHealth: false,
    privateReplies: false,
  },
  'v1.3': {
    errorFormat: 'current',
    formBodies: false,
    invalidPathParamStatus: 400,
    clampLimit: false,
    employeeExtras: true,
    searchNaming: 'leads',
    uploadNestedTwice: false,
    webhookLimit: 10,
    sourceIdentifier: true,
    sendSaId: true,
    deliveryStatus: true,
    integrationWebhook: true,
    integrationHealth: true,
    privateReplies: true,
  },
};

/** The version a URL is under, from its first path segment; undefined outside the API. */
export function versionOfUrl(url: string): ApiVersion | undefined {
  const match = /^\/(v1\.[123])(?:[/?#]|$)/.exec(url);
  return match ? (match[1] as ApiVersion) : undefined;
}
