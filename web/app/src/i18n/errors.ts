import { ApiError } from '../api/client';
import { catalogues, getLocale, type MessageKey, t } from './index';

/**
 * What the app shows for a failed call: its own text for each error `code` of docs/api/errors.md it
 * knows, in the current language; the server's English `error` text for any other.
 */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    const key = `error.${e.code ?? ''}` as MessageKey;
    if (e.code && key in catalogues[getLocale()]) return t(key, { reason: e.message });
    return e.message;
  }
  // fetch rejects with a TypeError when the server cannot be reached
  if (e instanceof TypeError) return t('error.network');
  return e instanceof Error ? e.message : String(e);
}
