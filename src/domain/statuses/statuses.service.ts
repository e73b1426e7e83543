import { textsOf, type Locale } from '../../i18n/index.js';
import type { Executor } from '../../db/database.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { conflict, invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { lockAccountLists } from './account-lock.repo.js';
import * as repo from './statuses.repo.js';
import { recordLeadChange } from '../leads/lead-events.js';
import {
  compareStatuses,
  DEFAULT_STATUSES,
  DEFAULT_TYPE_COLORS,
  type NewStatusInput,
  type ReorderItem,
  type StatusRemoval,
  type StatusRow,
  type StatusType,
  type StatusUpdateInput,
} from './statuses.types.js';

/**
 * Lead statuses (docs/api/resources.md "Payment type, tag, status, template group", docs/api/leads.md). Everyone in the account reads them; only
 * the owner changes them. A status never changes type: deleting it and creating another is the way.
 */
export class StatusesService {
  constructor(private readonly deps: Deps) {}

  /** Every status of the account, by type (active, completed, failed, ignore), then order, then id. */
  async list(auth: AuthContext): Promise<StatusRow[]> {
    const rows = await repo.listStatuses(this.deps.db.kysely, auth.accountId);
    return rows.sort(compareStatuses);
  }

  async create(auth: AuthContext, input: NewStatusInput): Promise<StatusRow> {
    requireOwner(auth);
    const name = cleanName(input.name);
    return this.write(auth.accountId, async (trx) => {
      await this.assertNameFree(trx, auth.accountId, input.type, name);
      const order = input.order ?? ((await repo.maxPosition(trx, auth.accountId, input.type)) ?? 0) + 1;
      return repo.insertStatus(trx, {
        account_id: auth.accountId,
        name,
        type: input.type,
        position: order,
        color: input.color ?? DEFAULT_TYPE_COLORS[input.type],
        created_at: this.deps.clock.now(),
      });
    });
  }

  /** Changes name and color only; a `type` other than the status's own is a conflict (409). */
  async update(auth: AuthContext, id: number, input: StatusUpdateInput): Promise<StatusRow> {
    requireOwner(auth);
    const name = input.name === undefined ? undefined : cleanName(input.name);
    return this.write(auth.accountId, async (trx) => {
      const status = await repo.findStatus(trx, auth.accountId, id);
      if (!status) throw notFound('Status not found');
      if (input.type !== undefined && input.type !== status.type) {
        throw conflict(`A status cannot change its type (${status.type}): delete it and create one of type ${input.type}`);
      }
      if (name !== undefined && name !== status.name) await this.assertNameFree(trx, auth.accountId, status.type, name, id);
      const patch = { ...(name !== undefined ? { name } : {}), ...(input.color !== undefined ? { color: input.color } : {}) };
      if (Object.keys(patch).length) await repo.updateStatus(trx, auth.accountId, id, patch);
      return { ...status, ...patch };
    });
  }

  /**
   * Sets the order of some statuses of one type. Every id must be a status of this account, listed
   * once, and all of one type (else 400, nothing changed). Answers every status of that type, sorted.
   */
  async reorder(auth: AuthContext, items: ReorderItem[]): Promise<StatusRow[]> {
    requireOwner(auth);
    const ids = items.map((i) => i.id);
    const repeated = ids.find((id, i) => ids.indexOf(id) !== i);
    if (repeated !== undefined)
      throw invalid(`Status ${repeated} is listed more than once`, [{ path: 'body', message: 'ids must be unique' }]);
    return this.write(auth.accountId, async (trx) => {
      const found = await repo.findStatusesByIds(trx, auth.accountId, ids);
      const unknown = ids.filter((id) => !found.some((s) => s.id === id));
      if (unknown.length) {
        throw invalid(`Unknown status id: ${unknown.join(', ')}`, [{ path: 'body', message: `no status ${unknown.join(', ')}` }]);
      }
      const types = [...new Set(found.map((s) => s.type))];
      if (types.length > 1) {
        throw invalid(`Statuses can only be reordered within one type; these are of types ${types.join(', ')}`, [
          { path: 'body', message: 'statuses of more than one type' },
        ]);
      }
      for (const item of items) await repo.updateStatus(trx, auth.accountId, item.id, { position: item.order });
      return repo.listStatuses(trx, auth.accountId, types[0] as StatusType);
    });
  }

  /**
   * Deletes a status. Its leads move to the first remaining status of the same type (lowest order),
   * or to the inbox when none remains; status_id and status_type change together.
   */
  async remove(auth: AuthContext, id: number): Promise<StatusRemoval> {
    requireOwner(auth);
    const now = this.deps.clock.now();
    return this.write(auth.accountId, async (trx) => {
      const status = await repo.findStatus(trx, auth.accountId, id);
      if (!status) throw notFound('Status not found');
      const next = await repo.firstStatusOfType(trx, auth.accountId, status.type, id);
      const to = next ? { statusId: next.id, statusType: next.type } : { statusId: null, statusType: 'inbox' as const };
      const before = new Map((await repo.leadsInStatus(trx, auth.accountId, id)).map((l) => [l.id, l]));
      const moved = await repo.moveLeadsOfStatus(trx, auth.accountId, id, to, now);
      for (const after of moved) {
        const was = before.get(after.id);
        if (!was) throw new Error(`lead ${after.id} moved without being read first`);
        await recordLeadChange(trx, was, after, ['statusId'], now);
      }
      await repo.deleteStatus(trx, auth.accountId, id);
      return { movedLeadIds: moved.map((l) => l.id), to };
    });
  }

  private write<T>(accountId: number, fn: (trx: Executor) => Promise<T>): Promise<T> {
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      await lockAccountLists(trx, this.deps.db.dialect, accountId);
      return fn(trx);
    });
  }

  /** Names are unique within a type (compared exactly, after trimming). */
  private async assertNameFree(db: Executor, accountId: number, type: StatusType, name: string, exceptId?: number) {
    const taken = (await repo.listStatuses(db, accountId, type)).some((s) => s.name === name && s.id !== exceptId);
    if (taken) throw conflict(`A ${type} status named "${name}" already exists`);
  }
}

function cleanName(raw: string): string {
  const name = raw.trim();
  if (!name) throw invalid('Status name must not be blank', [{ path: 'body.name', message: 'must not be blank' }]);
  return name;
}

/** Account seeder: the default statuses, one or more of every type. Runs in the account's transaction. */
export async function seedDefaultStatuses(trx: Executor, accountId: number, now: number, locale: Locale = 'en'): Promise<void> {
  await repo.insertStatuses(
    trx,
    DEFAULT_STATUSES.map((s) => ({
      account_id: accountId,
      name: textsOf(locale).defaultStatuses[s.name],
      type: s.type,
      position: s.order,
      color: s.color,
      created_at: now,
    })),
  );
}
