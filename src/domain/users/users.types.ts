/** Logins are e-mail addresses, compared without case and surrounding spaces. */
export function normalizeLogin(login: string): string {
  return login.trim().toLowerCase();
}

export type Role = 'owner' | 'manager';

import { LOCALES, type Locale } from '../../i18n/index.js';

/** The languages Parley speaks to employees (agent app, e-mails, exports): `locale` on the employee (src/i18n). */
export { LOCALES, type Locale };

/** A stored locale as a known one, else null (not chosen). */
export function knownLocale(value: string | null | undefined): Locale | null {
  return (LOCALES as readonly string[]).includes(value ?? '') ? (value as Locale) : null;
}
