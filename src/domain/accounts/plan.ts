import type { DefaultPlan } from '../../config.js';

/** The stored tariff of an account (docs/api/resources.md "Account, user, tariff"); `expiration` in Unix milliseconds. */
export interface Plan {
  trial: boolean;
  expiration: number;
  value: string;
  currency: string;
  period: number;
  subscription: boolean;
  packages: Array<{ packageId: number; count: number; name: string }>;
  price: number;
}

export function planFromDefault(defaults: DefaultPlan, now: number): Plan {
  return {
    trial: defaults.trial,
    expiration: now + defaults.days * 24 * 3600 * 1000,
    value: defaults.value,
    currency: defaults.currency,
    period: defaults.period,
    subscription: defaults.subscription,
    packages: [],
    price: defaults.price,
  };
}

export function parsePlan(json: string): Plan {
  return JSON.parse(json) as Plan;
}

export type AccountStatus = 'active' | 'expired';

export function accountStatus(plan: Plan, now: number): AccountStatus {
  return plan.expiration <= now ? 'expired' : 'active';
}
