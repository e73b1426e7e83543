import type { Executor } from '../../db/database.js';
import type { Locale } from '../users/users.types.js';
import { seedDefaultStatuses } from '../statuses/statuses.service.js';

/**
 * What a new account starts with, run inside the transaction that creates the account. Each area
 * that needs defaults (statuses, for instance) adds its seeder here; names are written in the owner's
 * language.
 */
export type AccountSeeder = (trx: Executor, accountId: number, now: number, locale: Locale) => Promise<void>;

export const ACCOUNT_SEEDERS: AccountSeeder[] = [seedDefaultStatuses];
