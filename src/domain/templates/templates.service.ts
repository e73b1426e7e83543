import type { Executor } from '../../db/database.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { conflict, forbidden, invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { lockAccountLists } from '../statuses/account-lock.repo.js';
import { findUser } from '../users/users.repo.js';
import * as repo from './templates.repo.js';
import type { PhraseInput, TemplateGroupRow, TemplateGroupView, TemplateRow } from './templates.types.js';

/**
 * Reply templates: groups (owner-managed) of phrases. A phrase is shared (`user_id` null) or
 * personal to one employee. Everyone, the owner included, sees the shared phrases and its own
 * personal ones: personal phrases are nobody else's business. The owner may write any phrase of the
 * account; a manager may write only its own personal phrases (a shared phrase: 403; another
 * employee's personal phrase, which it cannot see: 404).
 */
export class TemplatesService {
  constructor(private readonly deps: Deps) {}

  /** Groups in creation order, each with the phrases the caller sees, in creation order. */
  async list(auth: AuthContext): Promise<TemplateGroupView[]> {
    const db = this.deps.db.kysely;
    const [groups, phrases] = await Promise.all([
      repo.listGroups(db, auth.accountId),
      repo.listVisiblePhrases(db, auth.accountId, auth.userId),
    ]);
    return groups.map((group) => ({ group, templates: phrases.filter((p) => p.group_id === group.id) }));
  }

  async createGroup(auth: AuthContext, rawKey: string): Promise<TemplateGroupView> {
    requireOwner(auth);
    const key = cleanKey(rawKey, 'key');
    return this.write(auth.accountId, async (trx) => {
      if (await repo.findGroupByKey(trx, auth.accountId, key)) throw conflict(`A template group "${key}" already exists`);
      const group = await repo.insertGroup(trx, auth.accountId, key, this.deps.clock.now());
      return { group, templates: [] };
    });
  }

  /** Renames the group named `key`: unknown key 404, a new key another group has 409. */
  async renameGroup(auth: AuthContext, rawKey: string, rawNewKey: string): Promise<TemplateGroupView> {
    requireOwner(auth);
    const key = rawKey.trim();
    const newKey = cleanKey(rawNewKey, 'newKey');
    return this.write(auth.accountId, async (trx) => {
      const group = await repo.findGroupByKey(trx, auth.accountId, key);
      if (!group) throw notFound(`No template group "${key}"`);
      if (newKey !== group.key) {
        if (await repo.findGroupByKey(trx, auth.accountId, newKey)) throw conflict(`A template group "${newKey}" already exists`);
        await repo.renameGroup(trx, auth.accountId, group.id, newKey);
      }
      const templates = await repo.listVisiblePhrases(trx, auth.accountId, auth.userId, group.id);
      return { group: { ...group, key: newKey }, templates };
    });
  }

  /** Deletes a group with all its phrases (personal ones included). */
  async deleteGroup(auth: AuthContext, id: number): Promise<void> {
    requireOwner(auth);
    await this.write(auth.accountId, async (trx) => {
      if (!(await repo.findGroup(trx, auth.accountId, id))) throw notFound('Template group not found');
      await repo.deleteGroup(trx, auth.accountId, id);
    });
  }

  async addPhrase(auth: AuthContext, groupId: number, input: PhraseInput & { template: string }): Promise<TemplateRow> {
    const template = cleanTemplate(input.template);
    const userId = input.userId ?? null;
    return this.write(auth.accountId, async (trx) => {
      await this.group(trx, auth.accountId, groupId);
      await this.assertMayAssign(trx, auth, userId);
      return repo.insertPhrase(trx, {
        account_id: auth.accountId,
        group_id: groupId,
        template,
        hotkey: input.hotkey ?? '',
        user_id: userId,
        created_at: this.deps.clock.now(),
      });
    });
  }

  /** Edits a phrase of the group; absent fields keep their value, `userId: null` makes it shared. */
  async updatePhrase(auth: AuthContext, groupId: number, id: number, input: PhraseInput): Promise<TemplateRow> {
    const template = input.template === undefined ? undefined : cleanTemplate(input.template);
    return this.write(auth.accountId, async (trx) => {
      await this.group(trx, auth.accountId, groupId);
      const phrase = await this.writablePhrase(trx, auth, groupId, id);
      const next = {
        template: template ?? phrase.template,
        hotkey: input.hotkey === undefined ? phrase.hotkey : (input.hotkey ?? ''),
        user_id: input.userId === undefined ? phrase.user_id : input.userId,
      };
      await this.assertMayAssign(trx, auth, next.user_id);
      await repo.updatePhrase(trx, auth.accountId, id, next);
      return { ...phrase, ...next };
    });
  }

  async deletePhrase(auth: AuthContext, groupId: number, id: number): Promise<void> {
    await this.write(auth.accountId, async (trx) => {
      await this.group(trx, auth.accountId, groupId);
      await this.writablePhrase(trx, auth, groupId, id);
      await repo.deletePhrase(trx, auth.accountId, id);
    });
  }

  private write<T>(accountId: number, fn: (trx: Executor) => Promise<T>): Promise<T> {
    return this.deps.db.kysely.transaction().execute(async (trx) => {
      await lockAccountLists(trx, this.deps.db.dialect, accountId);
      return fn(trx);
    });
  }

  private async group(db: Executor, accountId: number, id: number): Promise<TemplateGroupRow> {
    const group = await repo.findGroup(db, accountId, id);
    if (!group) throw notFound('Template group not found');
    return group;
  }

  /** The phrase, when the caller may change it: the owner any, a manager only its own personal ones. */
  private async writablePhrase(db: Executor, auth: AuthContext, groupId: number, id: number): Promise<TemplateRow> {
    const phrase = await repo.findPhrase(db, auth.accountId, groupId, id);
    const visible = phrase && (auth.role === 'owner' || phrase.user_id === null || phrase.user_id === auth.userId);
    if (!phrase || !visible) throw notFound('Template not found');
    if (auth.role !== 'owner' && phrase.user_id !== auth.userId) {
      throw forbidden('Only the account owner may change phrases shared with every employee');
    }
    return phrase;
  }

  /** Who a phrase may belong to: a manager only itself; the owner anyone of the account, or nobody (shared). */
  private async assertMayAssign(db: Executor, auth: AuthContext, userId: number | null): Promise<void> {
    if (auth.role !== 'owner') {
      if (userId !== auth.userId) {
        throw forbidden('A manager may only write its own personal phrases (userId must be its own id)');
      }
      return;
    }
    if (userId !== null && !(await findUser(db, auth.accountId, userId))) {
      throw invalid(`userId ${userId} is not an employee of this account`, [
        { path: 'body.userId', message: 'is not an employee of this account' },
      ]);
    }
  }
}

function cleanKey(raw: string, field: string): string {
  const key = raw.trim();
  if (!key) throw invalid(`${field} must not be blank`, [{ path: `body.${field}`, message: 'must not be blank' }]);
  return key;
}

function cleanTemplate(raw: string): string {
  if (!raw.trim()) throw invalid('template must not be blank', [{ path: 'body.template', message: 'must not be blank' }]);
  return raw;
}
