import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { DialectName, Executor } from '../../db/database.js';
import type { FileStorage } from '../../storage/storage.js';
import { FileTooLargeError } from '../../storage/storage.js';
import { AppError } from '../errors.js';
import { SECTION_BY_NAME, SECTIONS, type ArchiveRecord, type SectionSpec } from './archive-format.js';
import type { Progress } from './account-exporter.js';
import { IdMap } from './id-map.js';
import { ImportError } from './import-error.js';
import * as repo from './portability.repo.js';
import { newSecret } from '../webhooks/webhooks.service.js';

export interface ImportCounters {
  done: number;
  total: number;
  files: number;
  filesWithoutBytes: number;
  referencesCleared: number;
}

const BATCH = 1000;

function sectionNamed(name: string): SectionSpec {
  const spec = SECTION_BY_NAME.get(name);
  if (!spec) throw new Error(`archive-format.ts has no section ${name}`);
  return spec;
}
const FILES_SECTION = sectionNamed('files');
/** References that may name a record the source no longer held (a removed employee): set to null. */
const OPTIONAL_REFS = new Set(['user_id', 'status_id', 'payment_type_id', 'profile_id']);
/** A file id in attachments and URLs: 22 base64url characters standing alone. */
const FILE_ID_TOKEN = /(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])/g;

/**
 * Writes an archive's records into a new account, in archive order: each batch gets fresh ids,
 * its references are remapped through the ids given to earlier records, and it is inserted in the
 * import's transaction. Files get new ids (an id is the capability in a public URL, and the
 * original may still exist here); messages' attachments and URLs are rewritten to the new ids.
 */
export class RecordWriter {
  readonly counts: Record<string, number> = {};
  private readonly maps = new Map<string, IdMap>();
  private readonly fileIds = new Map<string, string>();
  /** File records waiting for their bytes, which follow their part. */
  private readonly pendingFiles = new Map<string, ArchiveRecord>();
  /** [new lead id, old last message id] pairs, set once the messages are in. */
  private readonly lastMessages: number[] = [];
  private readonly nextIds = new Map<string, number>();
  private sectionIndex = -1;
  private batch: ArchiveRecord[] = [];

  constructor(
    private readonly db: Executor,
    private readonly dialect: DialectName,
    private readonly storage: FileStorage,
    private readonly accountId: number,
    private readonly counters: ImportCounters,
    private readonly stored: string[],
    private readonly progress: Progress,
  ) {}

  async part(spec: SectionSpec, name: string, body: Buffer): Promise<void> {
    const index = SECTIONS.indexOf(spec);
    if (index < this.sectionIndex)
      throw new ImportError(`The archive is out of order: ${name} comes after ${SECTIONS[this.sectionIndex].name}`);
    if (index > this.sectionIndex) {
      await this.endSection();
      this.sectionIndex = index;
    }
    const text = body.toString('utf8');
    let line = 0;
    for (let start = 0; start < text.length; ) {
      let end = text.indexOf('\n', start);
      if (end < 0) end = text.length;
      line++;
      const raw = text.slice(start, end);
      start = end + 1;
      if (!raw.trim()) continue;
      let record: unknown;
      try {
        record = JSON.parse(raw);
      } catch {
        throw new ImportError(`The archive is corrupt: ${name} line ${line} is not JSON`);
      }
      if (typeof record !== 'object' || record === null || Array.isArray(record))
        throw new ImportError(`The archive is corrupt: ${name} line ${line} is not a record`);
      this.batch.push(record as ArchiveRecord);
      // Employees name each other (allowed_users): their section is written in one batch.
      if (this.batch.length >= BATCH && spec.name !== 'employees') await this.flush(spec);
    }
  }

  async file(id: string, stream: Readable, size: number): Promise<void> {
    const current = this.current();
    if (current?.name === 'files') await this.flush(current);
    const record = this.pendingFiles.get(id);
    if (!record) throw new ImportError(`The archive holds the bytes of file ${id} without its record`);
    this.pendingFiles.delete(id);
    let put;
    try {
      put = await this.storage.put(stream, { name: String(record.name), mime: String(record.mime), maxBytes: size });
    } catch (err) {
      if (err instanceof FileTooLargeError) throw new ImportError(`The archive is corrupt: file ${id} is larger than its entry`);
      throw err;
    }
    this.stored.push(put.key);
    if (put.size !== Number(record.size) || put.md5 !== record.md5)
      throw new ImportError(`The archive is corrupt: the bytes of file ${id} do not match its size and MD5`);
    await this.insertFile(id, record, put.key);
    this.counters.files++;
  }

  async finish(): Promise<void> {
    await this.endSection();
    const messages = this.maps.get('messages') ?? new IdMap();
    const pairs: number[] = [];
    for (let i = 0; i < this.lastMessages.length; i += 2) {
      const id = messages.get(this.lastMessages[i + 1]);
      if (id !== undefined) pairs.push(this.lastMessages[i], id);
    }
    await repo.setLastMessages(this.db, pairs);
  }

  private current(): SectionSpec | undefined {
    return SECTIONS[this.sectionIndex];
  }

  private async endSection(): Promise<void> {
    const spec = this.current();
    if (!spec) return;
    await this.flush(spec);
    if (spec.name === 'files') {
      // Records whose bytes the export could not read: kept, with no stored object.
      for (const [id, record] of this.pendingFiles) {
        await this.insertFile(id, record, '');
        this.counters.filesWithoutBytes++;
      }
      this.pendingFiles.clear();
    }
  }

  private async insertFile(oldId: string, record: ArchiveRecord, storageKey: string): Promise<void> {
    const id = crypto.randomBytes(16).toString('base64url');
    this.fileIds.set(oldId, id);
    const row = { id, account_id: this.accountId, storage_key: storageKey, ...pick(record, FILES_SECTION.columns) };
    await this.insert('files', 'files', [row]);
  }

  private async flush(spec: SectionSpec): Promise<void> {
    const records = this.batch;
    this.batch = [];
    if (!records.length) return;
    this.counts[spec.name] = (this.counts[spec.name] ?? 0) + records.length;
    if (spec.name === 'files') {
      for (const r of records) {
        if (typeof r.id !== 'string' || !/^[A-Za-z0-9_-]{22}$/.test(r.id) || this.pendingFiles.has(r.id) || this.fileIds.has(r.id)) {
          throw new ImportError('The archive is corrupt: a file record has no valid id');
        }
        this.pendingFiles.set(r.id, r);
      }
      this.tick(records.length);
      return;
    }
    let map = this.maps.get(spec.name);
    if (!map && spec.hasId) {
      map = new IdMap();
      this.maps.set(spec.name, map);
    }
    const ids = spec.hasId ? await repo.allocateIds(this.db, this.dialect, spec.table, records.length, this.nextIds) : [];
    records.forEach((r, i) => {
      if (!map) return;
      if (!Number.isSafeInteger(r.id) || !map.add(r.id as number, ids[i]))
        throw new ImportError(`The archive is corrupt: ${spec.name} ids are missing or out of order`);
    });
    const rows = records.map((r, i) => this.row(spec, r, ids[i]));
    await this.insert(spec.name, spec.table, rows);
    this.tick(records.length);
  }

  private row(spec: SectionSpec, r: ArchiveRecord, id: number | undefined): Record<string, unknown> {
    const row: Record<string, unknown> = { ...(id !== undefined ? { id } : {}), account_id: this.accountId, ...pick(r, spec.columns) };
    for (const [column, target] of Object.entries(spec.refs)) {
      const old = row[column];
      if (old === null || old === undefined) continue;
      const mapped = typeof old === 'number' ? this.maps.get(target)?.get(old) : undefined;
      if (mapped !== undefined) row[column] = mapped;
      else if (OPTIONAL_REFS.has(column) && spec.name !== 'employee_integrations') {
        row[column] = null;
        this.counters.referencesCleared++;
      } else
        throw new ImportError(
          `The archive is inconsistent: a record of ${spec.name} names ${target} ${String(old)}, which it does not hold`,
        );
    }
    if (spec.name === 'employees') row.allowed_users = this.remapAllowedUsers(row.allowed_users);
    // A new secret: the archive never holds one (receivers get the new one from the owner).
    if (spec.name === 'webhooks') row.secret = newSecret();
    if (spec.name === 'integrations') row.user_mappings = this.remapMapping(row.user_mappings);
    if (spec.name === 'leads' && id !== undefined && typeof row.last_message_id === 'number') {
      this.lastMessages.push(id, row.last_message_id);
      row.last_message_id = null;
    }
    if (spec.name === 'messages' && this.fileIds.size) {
      for (const column of ['attachments', 'url']) {
        if (typeof row[column] === 'string') row[column] = (row[column] as string).replace(FILE_ID_TOKEN, (m) => this.fileIds.get(m) ?? m);
      }
    }
    return row;
  }

  /** allowed_users: a JSON array of employee ids. */
  private remapAllowedUsers(value: unknown): unknown {
    if (typeof value !== 'string') return value;
    const ids = safeJson(value);
    if (!Array.isArray(ids)) return value;
    const employees = this.maps.get('employees');
    return JSON.stringify(ids.map((id) => (typeof id === 'number' ? employees?.get(id) : undefined)).filter((id) => id !== undefined));
  }

  /** user_mappings: a JSON object of external user -> employee id. */
  private remapMapping(value: unknown): unknown {
    if (typeof value !== 'string') return value;
    const mapping = safeJson(value);
    if (typeof mapping !== 'object' || mapping === null || Array.isArray(mapping)) return value;
    const out: Record<string, number> = {};
    for (const [key, id] of Object.entries(mapping as Record<string, unknown>)) {
      const mapped = typeof id === 'number' ? this.maps.get('employees')?.get(id) : undefined;
      if (mapped !== undefined) out[key] = mapped;
    }
    return JSON.stringify(out);
  }

  private async insert(section: string, table: SectionSpec['table'], rows: Record<string, unknown>[]): Promise<void> {
    if (section === 'employees') {
      const taken = await repo.loginsTaken(
        this.db,
        rows.map((r) => String(r.login)),
      );
      if (taken.length)
        throw new ImportError(
          `Employee logins already used in this installation: ${taken.join(', ')} (a login names one employee of one account)`,
        );
    }
    try {
      await repo.insertRows(this.db, table, rows);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new ImportError(`The archive's ${section} records were refused by the database: ${(err as Error).message}`);
    }
  }

  private tick(n: number): void {
    this.counters.done += n;
    this.progress(this.counters.done, this.counters.total);
  }
}

function pick(record: ArchiveRecord, columns: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const c of columns) {
    const v = record[c];
    if (v === undefined) continue;
    if (v !== null && typeof v !== 'string' && typeof v !== 'number')
      throw new ImportError(`The archive is corrupt: ${c} holds a ${Array.isArray(v) ? 'list' : typeof v}`);
    out[c] = v;
  }
  return out;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
