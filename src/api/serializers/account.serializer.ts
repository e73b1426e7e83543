import type { AuthContext } from '../../domain/auth/auth-context.js';
import type { AccountStatus, Plan } from '../../domain/accounts/plan.js';
import { knownLocale } from '../../domain/users/users.types.js';
import { isoTime } from './time.js';

/**
 * `GET /account/me` (v1.3, with the user's `locale`) and `GET /me` (v1.1, v1.2): `user` only for
 * tokens acting as a user.
 */
export function serializeMe(auth: AuthContext, status: AccountStatus, withLocale: boolean) {
  const account = { id: auth.accountId, status };
  if (auth.typ === 'api') return { account };
  const u = auth.user;
  const user = { id: u.id, login: u.login, name: u.name ?? '', role: u.role, metadata: JSON.parse(u.metadata) as object };
  return { account, user: withLocale ? { ...user, locale: knownLocale(u.locale) } : user };
}

export function serializeTariff(plan: Plan) {
  return {
    trial: plan.trial,
    expiration: isoTime(plan.expiration),
    value: plan.value,
    currency: plan.currency,
    period: plan.period,
    subscription: plan.subscription,
    packages: plan.packages,
    price: plan.price,
  };
}
