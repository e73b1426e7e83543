import type { ErrorDetail } from '../errors.js';
import { INTEGRATION_TYPES, type IntegrationType } from './integration-types.js';

/**
 * The shape of each credential a type takes (docs/channels/README.md): checked before the provider
 * is called, so a token pasted without its colon answers 400 naming the field, and shown to the
 * agent app by `GET /v1.3/integrations/types` so its forms check the same before sending.
 */
export interface CredentialShape {
  name: string;
  /** A regular expression (JavaScript syntax) the whole trimmed value matches. */
  pattern: string;
  /** What the value looks like, for the error detail. */
  format: string;
}

const NO_SPACES: Omit<CredentialShape, 'name'> = { pattern: '^\\S{1,4096}$', format: 'text without spaces' };
const NUMERIC: Omit<CredentialShape, 'name'> = { pattern: '^\\d{1,30}$', format: 'digits only' };

const SHAPES: Partial<Record<IntegrationType, Record<string, Omit<CredentialShape, 'name'>>>> = {
  msgrb_bot: { token: { pattern: '^\\d{1,20}:[A-Za-z0-9_-]{1,200}$', format: 'the bot id, a colon and letters, e.g. 123456:ABC-def_123' } },
  msgrc_bot: { token: NO_SPACES },
  msgra_business_api: { accessToken: NO_SPACES, phoneNumberId: NUMERIC, wabaId: NUMERIC, appSecret: NO_SPACES },
  social1_messenger: { pageAccessToken: NO_SPACES, pageId: NUMERIC, appSecret: NO_SPACES },
  social1_group: { pageAccessToken: NO_SPACES, pageId: NUMERIC, appSecret: NO_SPACES },
  photonetV3: { accessToken: NO_SPACES, appSecret: NO_SPACES },
  photonetVOff: { accessToken: NO_SPACES, appSecret: NO_SPACES },
  social2_group: { token: NO_SPACES, groupId: { pattern: '^-?\\d{1,12}$', format: 'the numeric id of the community' } },
  social3: { token: NO_SPACES },
};

/** The credentials a type takes, in the order its form asks them. */
export function credentialShapes(type: IntegrationType): CredentialShape[] {
  const shapes = SHAPES[type] ?? {};
  return INTEGRATION_TYPES[type].requiredCredentials.map((name) => ({ name, ...(shapes[name] ?? NO_SPACES) }));
}

/** Details of the required credentials that are missing or not of their shape; empty when all fit. */
export function credentialProblems(type: IntegrationType, credentials: Record<string, string>): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  for (const shape of credentialShapes(type)) {
    const value = credentials[shape.name]?.trim() ?? '';
    if (!value) problems.push({ path: `body.credentials.${shape.name}`, message: 'is required' });
    else if (!new RegExp(shape.pattern).test(value)) {
      problems.push({ path: `body.credentials.${shape.name}`, message: `must be ${shape.format}` });
    }
  }
  return problems;
}
