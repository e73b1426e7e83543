/** Logins are e-mail addresses, compared without case and surrounding spaces. */
export function normalizeLogin(login: string): string {
  return login.trim().toLowerCase();
}

export type Role = 'owner' | 'manager';

/** The languages Parley speaks to employees (agent app, e-mails, exports): `locale` on the employee. */
export const LOCALES = ['en', 'ru'] as const;
export type Locale = (typeof LOCALES)[number];

/** A stored locale as a known one, else null (not chosen). */
export function knownLocale(value: string | null | undefined): Locale | null {
  return (LOCALES as readonly string[]).includes(value ?? '') ? (value as Locale) : null;
}
