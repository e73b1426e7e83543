import type { UserRow } from '../../db/schema.js';
import type { Role } from '../users/users.types.js';

/** Who a request acts as. `api` keys act for the account (as its owner) but carry no user object. */
export interface AuthContext {
  accountId: number;
  userId: number;
  role: Role;
  typ: 'access' | 'plugin' | 'api' | 'oauth';
  user: UserRow;
  /** OAuth 2 tokens only: the scopes that narrow what the employee may do (policy.ts#requireScope). */
  scopes?: readonly string[];
}

/** The employee's token generation: tokens of an older one (signed out everywhere, reset) are refused. */
export function generationOf(user: UserRow): number {
  return Number(user.token_generation ?? 0);
}
