import type { Executor } from '../../db/database.js';
import { seedDefaultStatuses } from '../statuses/statuses.service.js';

/**
 * What a new account starts with, run inside the transaction that creates the account. Each area
 * that needs defaults (statuses, for instance) adds its seeder here.
 */
export type AccountSeeder = (trx: Executor, accountId: number, now: number) => Promise<void>;

export const ACCOUNT_SEEDERS: AccountSeeder[] = [seedDefaultStatuses];
