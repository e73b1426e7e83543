/** Logins are e-mail addresses, compared without case and surrounding spaces. */
export function normalizeLogin(login: string): string {
  return login.trim().toLowerCase();
}

export type Role = 'owner' | 'manager';
