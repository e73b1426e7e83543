import type { IntegrationRow } from '../../db/schema.js';
import { integrationView, type IntegrationView, type UserMapping } from '../../domain/integrations/integrations.types.js';

/**
 * api.md Integration: the same fields on every version (decisions.md §10 lists no difference).
 * Credentials and settings never leave the server.
 */
export function serializeIntegration(row: IntegrationRow): IntegrationView {
  return integrationView(row);
}

export function serializeIntegrations(rows: IntegrationRow[]): IntegrationView[] {
  return rows.map(integrationView);
}

/** api.md user mapping object: `default` first, then the external ids. */
export function serializeUserMapping(mapping: UserMapping): UserMapping {
  const { default: fallback, ...rest } = mapping;
  return { default: fallback!, ...rest };
}
