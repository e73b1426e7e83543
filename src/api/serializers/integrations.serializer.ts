import type { IntegrationRow } from '../../db/schema.js';
import type { HealthView } from '../../domain/integrations/integration-health.js';
import { integrationView, type IntegrationView, type UserMapping } from '../../domain/integrations/integrations.types.js';

/**
 * The Integration (docs/api/resources.md): the same fields on every version (docs/api/versions.md lists no difference).
 * Credentials and settings never leave the server.
 */
export function serializeIntegration(row: IntegrationRow, webhookOf?: WebhookOf, health?: HealthView): IntegrationOut {
  const webhook = webhookOf?.(row);
  return { ...integrationView(row), ...(webhook ? { webhook } : {}), ...(health ? { health } : {}) };
}

/** `healthOf` (v1.3) gives each row's health. */
export function serializeIntegrations(rows: IntegrationRow[], webhookOf?: WebhookOf, healthOf?: Map<number, HealthView>): IntegrationOut[] {
  return rows.map((row) => serializeIntegration(row, webhookOf, healthOf?.get(row.id)));
}

type IntegrationOut = IntegrationView & { webhook?: IntegrationWebhook; health?: HealthView };

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
