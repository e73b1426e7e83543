import { PassThrough, type Readable } from 'node:stream';
import type { AccountExportRow } from '../../db/schema.js';
import type { FileStorage } from '../../storage/storage.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { AppError, conflict, notFound } from '../errors.js';
import { requireOwner } from '../policy/policy.js';
import { exportAccount } from './account-exporter.js';
import * as repo from './exports.repo.js';

/** A worker holds a job this long between progress writes; a job whose worker died is retaken after. */
const LEASE_MS = 5 * 60_000;
/** Progress is written at most this often (a row update per record would slow the export down). */
const PROGRESS_EVERY_MS = 1000;

/**
 * Account exports through the API (docs/api/data-ownership.md): the owner queues a job, a background
 * worker writes the archive (docs/export-format.md) into file storage with its progress in the
 * job's row, the owner downloads it until it expires; expired archives are removed.
 */
export class ExportsService {
  constructor(
    private readonly deps: Deps,
    private readonly storage: FileStorage,
    /** Wakes this process's worker when a job is queued. */
    public onQueued: () => void = () => {},
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  async create(auth: AuthContext): Promise<AccountExportRow> {
    requireOwner(auth);
    if (await repo.activeExport(this.db, auth.accountId))
      throw conflict('An export of this account is already queued or running', 'export_in_progress');
    const row = await repo.insertExport(this.db, { account_id: auth.accountId, user_id: auth.userId, created_at: this.deps.clock.now() });
    this.onQueued();
    return row;
  }

  async list(auth: AuthContext): Promise<AccountExportRow[]> {
    requireOwner(auth);
    return repo.listExports(this.db, auth.accountId, 20);
  }

  async get(auth: AuthContext, id: number): Promise<AccountExportRow> {
    requireOwner(auth);
    const row = await repo.findExport(this.db, auth.accountId, id);
    if (!row) throw notFound('No such export');
    return row;
  }

  /** The finished archive's bytes: 409 while it is being made, 410 once expired or failed. */
  async download(auth: AuthContext, id: number): Promise<{ row: AccountExportRow; stream: Readable }> {
    const row = await this.get(auth, id);
    if (row.status === 'queued' || row.status === 'running') throw conflict('The export is not finished yet', 'export_not_ready');
    if (row.status !== 'ready' || !row.storage_key || (row.expires_at ?? 0) <= this.deps.clock.now()) {
      throw new AppError(
        410,
        'export_gone',
        row.status === 'failed' ? 'The export failed; ask for a new one' : 'The export has expired; ask for a new one',
      );
    }
    const stream = await this.storage.open(row.storage_key);
    if (!stream) throw new AppError(410, 'export_gone', 'The export has expired; ask for a new one');
    return { row, stream };
  }

  /** Runs every job waiting, one after another; returns how many ran. The worker's unit of work. */
  async runPending(): Promise<number> {
    let n = 0;
    for (;;) {
      const job = await repo.claimExport(this.db, this.deps.clock.now(), LEASE_MS);
      if (!job) return n;
      await this.run(job);
      n++;
    }
  }

  private async run(job: AccountExportRow): Promise<void> {
    const pipe = new PassThrough();
    const stored = this.storage.put(pipe, { name: `account-${job.account_id}-export-${job.id}.tar.gz`, mime: 'application/gzip' });
    let lastWrite = 0;
    let pending: Promise<void> = Promise.resolve();
    const progress = (done: number, total: number) => {
      const now = this.deps.clock.now();
      if (now - lastWrite < PROGRESS_EVERY_MS && done < total) return;
      lastWrite = now;
      pending = pending.then(() => repo.updateExport(this.db, job.id, { done, total, lease_until: now + LEASE_MS }));
    };
    try {
      await exportAccount(this.db, this.storage, job.account_id, pipe, progress);
      const put = await stored;
      await pending;
      const now = this.deps.clock.now();
      await repo.updateExport(this.db, job.id, {
        status: 'ready',
        storage_key: put.key,
        size: put.size,
        finished_at: now,
        expires_at: now + this.deps.config.exportTtlHours * 3_600_000,
        lease_until: null,
      });
    } catch (err) {
      pipe.destroy();
      const put = await stored.catch(() => undefined);
      if (put) await this.storage.delete(put.key);
      await pending.catch(() => {});
      this.deps.log.error({ err, exportId: job.id }, 'account export failed');
      await repo.updateExport(this.db, job.id, {
        status: 'failed',
        error: (err as Error).message.slice(0, 500),
        finished_at: this.deps.clock.now(),
        lease_until: null,
      });
    }
  }

  /** Removes the archives of expired exports; their rows stay, as `expired`. */
  async expire(): Promise<number> {
    const rows = await repo.expiredExports(this.db, this.deps.clock.now());
    for (const row of rows) {
      if (row.storage_key) await this.storage.delete(row.storage_key);
      await repo.updateExport(this.db, row.id, { status: 'expired', storage_key: null });
    }
    return rows.length;
  }
}
