import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { FileStorage } from '../../storage/storage.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { invalid, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import type { Progress } from '../portability/account-exporter.js';
import * as repo from './retention.repo.js';

/** How long an account keeps messages and files, in days; null: forever (the default). */
export interface RetentionSettings {
  messagesDays: number | null;
  filesDays: number | null;
}

export interface SweepResult {
  messages: number;
  files: number;
}

const DAY_MS = 86_400_000;
/** Rows per transaction: each batch commits on its own, so ingest waits for one batch at most. */
const BATCH = 1000;
export const MAX_RETENTION_DAYS = 36_500;

/**
 * Retention (docs/api/data-ownership.md): per-account limits on the age of messages and files, a
 * sweep deleting what is older in small committed batches, and the deletion of a whole account.
 */
export class RetentionService {
  constructor(
    private readonly deps: Deps,
    private readonly storage: FileStorage,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async settings(auth: AuthContext): Promise<RetentionSettings> {
    requireOwner(auth);
    const row = await repo.findRetention(this.db, auth.accountId);
    return { messagesDays: row?.messages_days ?? null, filesDays: row?.files_days ?? null };
  }

  async update(auth: AuthContext, patch: Partial<RetentionSettings>): Promise<RetentionSettings> {
    requireOwner(auth);
    for (const key of ['messagesDays', 'filesDays'] as const) {
      const v = patch[key];
      if (v !== undefined && v !== null && (!Number.isSafeInteger(v) || v < 1 || v > MAX_RETENTION_DAYS)) {
        throw invalid(`${key} must be null (forever) or a whole number of days from 1 to ${MAX_RETENTION_DAYS}`, [
          { path: `/${key}`, message: 'out of range' },
        ]);
      }
    }
    const current = await this.settings(auth);
    const next = { ...current, ...patch };
    await repo.upsertRetention(this.db, {
      account_id: auth.accountId,
      messages_days: next.messagesDays,
      files_days: next.filesDays,
      updated_at: this.deps.clock.now(),
    });
    return next;
  }

  /** One pass over every account with a limit: deletes messages and files older than it. */
  async sweep(): Promise<SweepResult> {
    const result: SweepResult = { messages: 0, files: 0 };
    const now = this.deps.clock.now();
    for (const r of await repo.limitedRetentions(this.db)) {
      if (r.messages_days !== null) {
        const before = now - Number(r.messages_days) * DAY_MS;
        for (;;) {
          const n = await this.db.transaction().execute((trx) => repo.deleteMessagesBefore(trx, r.account_id, before, BATCH));
          result.messages += n;
          if (n < BATCH) break;
          // Let waiting requests (ingest) in between batches.
          await yieldToOthers();
        }
      }
      if (r.files_days !== null) {
        const before = now - Number(r.files_days) * DAY_MS;
        for (;;) {
          const rows = await repo.filesBefore(this.db, r.account_id, before, BATCH);
          // Bytes first: a crash in between leaves a record without bytes (a 404), never bytes nobody can reach.
          for (const f of rows) if (f.storage_key) await this.storage.delete(f.storage_key);
          await repo.deleteFileRows(
            this.db,
            r.account_id,
            rows.map((f) => f.id),
          );
          result.files += rows.length;
          if (rows.length < BATCH) break;
          await yieldToOthers();
        }
      }
    }
    return result;
  }

  /**
   * `parley account:delete`: every row and stored file of the account. Messages go in committed
   * batches (the bulk of the rows, with progress), then the stored bytes, then the account row,
   * which takes every remaining row with it. Re-running after an interruption finishes the job.
   */
  async deleteAccount(accountId: number, progress: Progress = () => {}): Promise<{ rows: number; files: number }> {
    if (!(await repo.accountExists(this.db, accountId))) throw notFound(`Account ${accountId} does not exist`);
    const rows = await repo.countAccountRows(this.db, accountId);
    const messages = await repo.countMessages(this.db, accountId);
    const keys = await repo.storageKeysOfAccount(this.db, accountId);
    const total = messages + keys.length + 1;
    let done = 0;
    for (;;) {
      const ids = await repo.someMessageIds(this.db, accountId, BATCH * 5);
      if (!ids.length) break;
      done += await this.db.transaction().execute((trx) => repo.deleteMessageIds(trx, ids));
      progress(done, total);
    }
    for (const key of keys) {
      await this.storage.delete(key);
      progress(++done, total);
    }
    await this.db.transaction().execute((trx) => repo.deleteAccountRow(trx, accountId));
    progress(total, total);
    return { rows, files: keys.length };
  }
}
