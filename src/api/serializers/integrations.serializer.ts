import type { IntegrationRow } from '../../db/schema.js';
import { integrationView, type IntegrationView, type UserMapping } from '../../domain/integrations/integrations.types.js';

/**
 * The Integration (docs/api/resources.md): the same fields on every version (docs/api/versions.md lists no difference).
 * Credentials and settings never leave the server.
 */
export function serializeIntegration(row: IntegrationRow, webhookOf?: WebhookOf): IntegrationView & { webhook?: IntegrationWebhook } {
  const webhook = webhookOf?.(row);
  return webhook ? { ...integrationView(row), webhook } : integrationView(row);
}

export function serializeIntegrations(
  rows: IntegrationRow[],
  webhookOf?: WebhookOf,
): Array<IntegrationView & { webhook?: IntegrationWebhook }> {
  return rows.map((row) => serializeIntegration(row, webhookOf));
}

/** What the owner pastes into a provider's webhook settings (Meta): the callback URL and verify token. */
export interface IntegrationWebhook {
  url: string | null;
  verifyToken: string;
}
/** The webhook of an integration whose provider needs one pasted, else undefined; given for owners only. */
export type WebhookOf = (row: IntegrationRow) => IntegrationWebhook | undefined;

/** The user mapping object (docs/api/integrations.md): `default` first, then the external ids. */
export function serializeUserMapping(mapping: UserMapping): UserMapping {
  const { default: fallback, ...rest } = mapping;
  return { default: fallback, ...rest };
}
