import { HOSTED_TYPE_NAMES } from '../channels/integration-types.js';

/**
 * A `"type"` member whose value is a type the hosted service names its own way. In JSON text a
 * quote inside a string is always escaped, so this matches members only, never message text.
 * (`jsonb` text, as PostgreSQL writes a stored payload, has a space after the colon.)
 */
const MAPPED_TYPE = new RegExp(`"type": ?"(${Object.keys(HOSTED_TYPE_NAMES).join('|')})"`, 'g');

/** Whether JSON text names a type that the `hosted` setting renames (then the setting is worth reading). */
export function namesMappedType(json: string): boolean {
  MAPPED_TYPE.lastIndex = 0;
  return MAPPED_TYPE.test(json);
}

/**
 * JSON text (an answer, a webhook body) with every integration type named the hosted service's way
 * where it has a name (docs/api/integrations.md): `"type":"msgra"` -> `"type":"whatsapp"`.
 */
export function withHostedTypeNames(json: string): string {
  return json.replace(MAPPED_TYPE, (_m, code: keyof typeof HOSTED_TYPE_NAMES) => `"type":"${HOSTED_TYPE_NAMES[code]}"`);
}
