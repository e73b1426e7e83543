import type { IntegrationRow } from '../../db/schema.js';

/** What `POST /v1.3/integrations` asks for; the schema has checked the JSON types and sizes. */
export interface ConnectInput {
  type: string;
  login?: string;
  credentials?: Record<string, string>;
  settings?: Record<string, unknown>;
}

/**
 * The Integration (docs/api/resources.md), the same on every version (docs/api/versions.md lists no difference). Used for
 * responses and for event payloads; credentials and settings are never part of it.
 */
export interface IntegrationView {
  id: number;
  type: string;
  login: string;
  avatar: string;
  externalId: string;
  /**
   * `active`, `auth failure`, or `connecting` for a bridge-served integration whose bridge is not
   * logged in and connected (docs/api/integrations.md).
   */
  status: string;
  identifier: string;
  url: string;
}

export function integrationView(row: IntegrationRow): IntegrationView {
  return {
    id: row.id,
    type: row.type,
    login: row.login,
    avatar: row.avatar,
    externalId: row.external_id,
    status: row.status,
    identifier: row.identifier,
    url: row.url,
  };
}

/**
 * The user mapping object (docs/api/integrations.md): external user id -> employee id; `default` -> the employee that gets
 * what maps to no one (the owner unless a mapping says otherwise).
 */
export type UserMapping = Record<string, number>;

export function parseSettings(json: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(json || '{}');
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
}

/**
 * The external business systems (a CRM and a warehouse system, docs/api/integrations.md) an integration is linked
 * to, declared at connection as `settings.businessSystems`. User mappings exist only for those.
 */
export function businessSystemsOf(row: Pick<IntegrationRow, 'settings'>): string[] {
  const systems = parseSettings(row.settings).businessSystems;
  return Array.isArray(systems) ? systems.filter((s): s is string => typeof s === 'string' && s !== '') : [];
}

export function parseUserMapping(json: string | null): UserMapping {
  if (!json) return {};
  const parsed: unknown = JSON.parse(json);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
  return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, number] => Number.isInteger(e[1])));
}
