import { en, type MessageKey } from './en';
import { t } from './index';

/** The catalogue's words for an API code (`<prefix>.<code>`); a code the app does not know yet as the server sends it. */
function named(prefix: string, code: string): string {
  const key = `${prefix}.${code}`;
  return key in en ? t(key as MessageKey) : code;
}

/** A source (conversation) type: direct messages, or comments on posts, photos, videos, products. */
export const sourceName = (type: string) => named('source', type);

/** An integration's status (`active`, `auth failure`, `connecting`) in words. */
export const integrationStatusName = (status: string) => named('integrationStatus', status);
