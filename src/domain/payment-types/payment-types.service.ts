import type { Executor } from '../../db/database.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { conflict, invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { lockAccountLists } from '../statuses/account-lock.repo.js';
import * as repo from './payment-types.repo.js';
import type { PaymentTypeRow } from './payment-types.types.js';

/** Payment types a lead may carry (docs/api/leads.md). Everyone reads them; the owner changes them. */
export class PaymentTypesService {
  constructor(private readonly deps: Deps) {}

  /** In creation order. */
  async list(auth: AuthContext): Promise<PaymentTypeRow[]> {
    return repo.listPaymentTypes(this.deps.db.kysely, auth.accountId);
  }

  /** Titles are unique in the account (exactly, after trimming): a taken one answers 409. */
  async create(auth: AuthContext, rawTitle: string): Promise<PaymentTypeRow> {
    requireOwner(auth);
    const title = cleanTitle(rawTitle);
    return this.write(auth.accountId, async (trx) => {
      await this.assertTitleFree(trx, auth.accountId, title);
      return repo.insertPaymentType(trx, auth.accountId, title);
    });
  }

  async update(auth: AuthContext, id: number, rawTitle: string): Promise<PaymentTypeRow> {
    requireOwner(auth);
    const title = cleanTitle(rawTitle);
    return this.write(auth.accountId, async (trx) => {
      const row = await repo.findPaymentType(trx, auth.accountId, id);
      if (!row) throw notFound('Payment type not found');
      if (title !== row.title) {
        await this.assertTitleFree(trx, auth.accountId, title);
        await repo.updatePaymentType(trx, auth.accountId, id, title);
      }
      return { ...row, title };
    });
  }

  /** Deletes it; leads that carried it keep no payment type (paymentTypeId null). */
  async remove(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    await this.write(auth.accountId, async (trx) => {
      if (!(await repo.findPaymentType(trx, auth.accountId, id))) throw notFound('Payment type not found');
      await repo.deletePaymentType(trx, auth.accountId, id, this.deps.clock.now());
    });
  }

  private write<T>(accountId: number, fn: (trx: Executor) => Promise<T>): Promise<T> {
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      await lockAccountLists(trx, this.deps.db.dialect, accountId);
      return fn(trx);
    });
  }

  private async assertTitleFree(db: Executor, accountId: number, title: string): Promise<void> {
    if (await repo.findPaymentTypeByTitle(db, accountId, title)) throw conflict(`A payment type "${title}" already exists`);
  }
}

function cleanTitle(raw: string): string {
  const title = raw.trim();
  if (!title) throw invalid('title must not be blank', [{ path: 'body.title', message: 'must not be blank' }]);
  return title;
}
