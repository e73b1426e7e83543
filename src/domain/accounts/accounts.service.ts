import type { Executor } from '../../db/database.js';
import type { AccountRow, UserRow } from '../../db/schema.js';
import type { Deps } from '../context.js';
import { conflict, invalid, notFound, signupClosed } from '../errors.js';
import { hashPassword } from '../auth/passwords.js';
import { endUserSessions } from '../auth/tokens.repo.js';
import { announceSessionsEnded } from '../auth/sessions-signal.js';
import { findOwner, findUserByLogin, insertUser, updateUser } from '../users/users.repo.js';
import { normalizeLogin, type Locale } from '../users/users.types.js';
import { countAccounts, findAccount, insertAccount, listAccounts, lockAccountCreation, updatePlan } from './accounts.repo.js';
import { accountStatus, parsePlan, planFromDefault, type AccountStatus, type Plan } from './plan.js';
import { ACCOUNT_SEEDERS } from './account-seeders.js';

export interface NewAccountInput {
  login: string;
  pass: string;
  name: string;
  /** The owner's language, and that of the default names the account starts with (statuses). */
  locale?: Locale;
}

export interface AccountSummary {
  id: number;
  name: string;
  status: AccountStatus;
  plan: Plan;
  owner: { id: number; login: string } | null;
  createdAt: number;
}

export class AccountsService {
  constructor(private readonly deps: Deps) {}

  /**
   * Creates an account with its confirmed owner and the defaults every account starts with, in one
   * transaction. `onlyIfFirst` makes it refuse when any account exists (first-run registration);
   * the check and the insert are serialized so two first registrations cannot both win.
   */
  async createWithOwner(input: NewAccountInput, opts: { onlyIfFirst?: boolean } = {}): Promise<UserRow> {
    const login = normalizeLogin(input.login);
    const passwordHash = await hashPassword(input.pass);
    const now = this.deps.clock.now();
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      if (this.deps.db.dialect === 'postgres') await lockAccountCreation(trx);
      if (opts.onlyIfFirst && (await countAccounts(trx)) > 0) {
        throw signupClosed();
      }
      if (await findUserByLogin(trx, login)) throw conflict('This login is already registered');
      const account = await insertAccount(trx, input.name, planFromDefault(this.deps.config.defaultPlan, now), now);
      const owner = await insertUser(trx, {
        account_id: account.id,
        login,
        name: input.name,
        password_hash: passwordHash,
        role: 'owner',
        confirmed: 1,
        allow_all_deals: 1,
        allowed_users: null,
        // Only when given: a database migrated before 0080 (tests of older migrations) has no such column.
        ...(input.locale ? { locale: input.locale } : {}),
        created_at: now,
      });
      for (const seed of ACCOUNT_SEEDERS) await seed(trx, account.id, now, input.locale ?? 'en');
      return owner;
    });
  }

  async get(accountId: number): Promise<AccountRow> {
    const account = await findAccount(this.deps.db.kysely, accountId);
    if (!account) throw notFound('Account not found');
    return account;
  }

  async plan(accountId: number): Promise<Plan> {
    return parsePlan((await this.get(accountId)).plan);
  }

  async status(accountId: number): Promise<AccountStatus> {
    return accountStatus(await this.plan(accountId), this.deps.clock.now());
  }

  async list(): Promise<AccountSummary[]> {
    const db = this.deps.db.kysely;
    const rows = await listAccounts(db);
    const now = this.deps.clock.now();
    return Promise.all(
      rows.map(async (row) => {
        const owner = await findOwner(db, row.id);
        const plan = parsePlan(row.plan);
        return {
          id: row.id,
          name: row.name,
          status: accountStatus(plan, now),
          plan,
          owner: owner ? { id: owner.id, login: owner.login } : null,
          createdAt: row.created_at,
        };
      }),
    );
  }

  async setPlan(accountId: number, patch: Partial<Plan>): Promise<Plan> {
    const next = { ...(await this.plan(accountId)), ...patch };
    if (!Number.isFinite(next.expiration)) throw invalid('expiration must be a date');
    await updatePlan(this.deps.db.kysely, accountId, next);
    return next;
  }

  /** Sets a new owner password and ends every session and token the owner had (its sockets close). */
  async resetOwnerPassword(login: string, pass: string, db: Executor = this.deps.db.kysely): Promise<UserRow> {
    const user = await findUserByLogin(db, normalizeLogin(login));
    if (user?.role !== 'owner') throw notFound('No owner with this login');
    const hash = await hashPassword(pass);
    const now = this.deps.clock.now();
    const change = async (trx: Executor) => {
      await updateUser(trx, user.account_id, user.id, { password_hash: hash });
      await endUserSessions(trx, user.account_id, user.id, now);
    };
    if (db.isTransaction) await change(db);
    else await db.transaction().execute(change);
    announceSessionsEnded(user.account_id, user.id);
    return user;
  }
}
