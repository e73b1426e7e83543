import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Attachment } from '../channels/channel.js';
import { integrationTypeInfo } from '../channels/integration-types.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { FileRow } from '../../db/schema.js';
import { FileTooLargeError, type ByteRange, type FileStorage, type PutResult } from '../../storage/storage.js';
import type { AuthContext } from '../auth/auth-context.js';
import type { Deps } from '../context.js';
import { AppError, invalid, notFound } from '../errors.js';
import { findIntegration } from '../integrations/integrations.repo.js';
import { canUseIntegration, scopeOf } from '../policy/policy.js';
import * as repo from './files.repo.js';
import type { StoredFile, Upload, UploadPart } from './files.types.js';
import { FILE_ID, fileRefOf, filePath, uploadTypeOf } from './media.js';
import { checkDeclaredMime, extensionOf, isForbiddenMime, mimeEssence, SNIFF_BYTES } from './sniff.js';

/** Form fields of an upload besides the file; others are ignored (docs/api/errors.md). */
const TARGET_FIELDS = new Set(['source', 'said', 'saId']);
const MAX_NAME = 255;

/** The upload's source stream failed (the client went away, the multipart body was cut). */
class SourceStreamError extends Error {
  constructor(override readonly cause: unknown) {
    super('upload stream failed');
  }
}

/**
 * Uploaded files (docs/api/messaging.md): storing a stream under the size limit with its type checked
 * against its bytes, the upload form's rules (exactly one of `source` or `said`, in the caller's
 * reach), the media objects that name a file and their way back to it, and the public download.
 * Upload is not a send: it keeps working for an expired account (only sends answer 402).
 */
export class FilesService {
  constructor(
    private readonly deps: Deps,
    readonly storage: FileStorage,
  ) {}

  private get db() {
    return this.deps.db.kysely;
  }

  /** Largest accepted file, in bytes (PARLEY_UPLOAD_LIMIT). */
  get maxBytes(): number {
    return this.deps.config.uploadLimit;
  }

  /**
   * Reads an upload form: stores its file part `media`, then checks the target fields. Whatever
   * fails (a field, the target, the parser, a second file) leaves nothing stored.
   */
  async upload(auth: AuthContext, parts: AsyncIterable<UploadPart>): Promise<Upload> {
    const fields = new Map<string, string>();
    let file: StoredFile | undefined;
    try {
      for await (const part of parts) {
        if (part.kind === 'field') {
          if (!TARGET_FIELDS.has(part.name) || fields.has(part.name)) continue;
          if (part.truncated) throw invalid(`${part.name} is too long`, [{ path: `body.${part.name}`, message: 'is too long' }]);
          fields.set(part.name, part.value);
          continue;
        }
        if (part.name !== 'media') {
          throw invalid(`Unexpected file part "${part.name}": the file goes in "media"`, [
            { path: `body.${part.name}`, message: 'is not a file field' },
          ]);
        }
        if (file) throw new AppError(413, 'payload_too_large', 'Only one file may be uploaded per request');
        file = await this.store(auth.accountId, part.stream, { filename: part.filename, mime: part.contentType });
        if (part.truncated?.()) throw tooLarge(this.maxBytes);
      }
      if (!file) throw invalid('The file part "media" is missing', [{ path: 'body.media', message: 'is required' }]);
      const target = await this.uploadTarget(auth, fields);
      return { file, type: uploadTypeOf(file.mime), ...target };
    } catch (err) {
      if (file) await this.remove(file.accountId, file.id);
      throw err;
    }
  }

  /**
   * Stores a file of the account. The declared type must be well formed, not one that could run as
   * script when served (415), and match the leading bytes (400); above the size limit 413. On any
   * failure nothing is kept.
   */
  async store(
    accountId: number,
    stream: Readable | AsyncIterable<Uint8Array>,
    meta: { filename?: string; mime: string },
  ): Promise<StoredFile> {
    const declared = mimeEssence(meta.mime);
    if (!declared) {
      throw invalid('The file part has no valid Content-Type', [{ path: 'body.media', message: 'has an invalid Content-Type' }]);
    }
    if (isForbiddenMime(declared)) {
      throw new AppError(415, 'unsupported_media_type', `Files of type ${declared} are not accepted`);
    }
    let mime = declared;
    const check = (head: Buffer) => {
      if (head.length === 0) throw invalid('The file is empty', [{ path: 'body.media', message: 'is empty' }]);
      const verdict = checkDeclaredMime(declared, head);
      if (!verdict.ok) {
        throw invalid('The file content does not match its Content-Type', [
          { path: 'body.media', message: `content does not match its Content-Type ${declared}` },
        ]);
      }
      mime = verdict.mime;
    };
    const name = cleanFilename(meta.filename, declared);
    let put: PutResult;
    try {
      put = await this.storage.put(guarded(stream, check), { name, mime: declared, maxBytes: this.maxBytes });
    } catch (err) {
      if (err instanceof FileTooLargeError) throw tooLarge(this.maxBytes);
      if (err instanceof SourceStreamError) {
        const status = (err.cause as { statusCode?: number } | null)?.statusCode;
        if (status && status >= 400 && status < 500) throw err.cause;
        throw invalid('The upload ended before the file was complete');
      }
      throw err;
    }

    const createdAt = this.deps.clock.now();
    const id = crypto.randomBytes(16).toString('base64url');
    for (let attempt = 1; ; attempt++) {
      // A random integer alias; a clash within the account (about n²/2^48) takes another.
      const num = crypto.randomInt(1, 2 ** 47);
      try {
        await repo.insertFile(this.db, {
          id,
          account_id: accountId,
          num,
          name,
          mime,
          size: put.size,
          md5: put.md5,
          storage_key: put.key,
          created_at: createdAt,
        });
        return this.view({
          id,
          account_id: accountId,
          num,
          name,
          mime,
          size: put.size,
          md5: put.md5,
          storage_key: put.key,
          created_at: createdAt,
        });
      } catch (err) {
        if (isUniqueViolation(err) && attempt < 5) continue;
        await this.storage.delete(put.key);
        throw err;
      }
    }
  }

  /** Removes a file of the account (row and bytes); a missing one is not an error. */
  async remove(accountId: number, id: string): Promise<void> {
    const row = await repo.findFileOfAccount(this.db, accountId, id);
    if (!row) return;
    await repo.deleteFileRow(this.db, accountId, id);
    await this.storage.delete(row.storage_key);
  }

  /** A file of the account by id. */
  async get(accountId: number, id: string): Promise<StoredFile | undefined> {
    if (!FILE_ID.test(id)) return undefined;
    const row = await repo.findFileOfAccount(this.db, accountId, id);
    return row && this.view(row);
  }

  /**
   * Turns a media object of any upload shape (or the v1.1 doubly nested answer) back into the
   * stored file it names, when that file belongs to the account; otherwise undefined. Never throws
   * on malformed input.
   */
  async resolveMedia(accountId: number, media: unknown): Promise<StoredFile | undefined> {
    const ref = fileRefOf(media);
    if (!ref) return undefined;
    const row =
      'id' in ref ? await repo.findFileOfAccount(this.db, accountId, ref.id) : await repo.findFileByNum(this.db, accountId, ref.num);
    return row && this.view(row);
  }

  /** The History message attachment of a stored file. */
  attachmentOf(file: StoredFile, type: 'photo' | 'doc' | 'video'): Attachment {
    return { type, url: file.url, text: file.name, filesize: file.size };
  }

  /**
   * The public download: a file by its unguessable id, whatever the account, with a way to read
   * its bytes (an inclusive range, or all of them). Undefined for an unknown id.
   */
  async download(id: string): Promise<{ file: StoredFile; open(range?: ByteRange): Promise<Readable | undefined> } | undefined> {
    if (!FILE_ID.test(id)) return undefined;
    const row = await repo.findFileById(this.db, id);
    if (!row) return undefined;
    return { file: this.view(row), open: (range) => this.storage.open(row.storage_key, range) };
  }

  /**
   * The integration an upload is for: from `source` (a channel's realId, number or numeric string,
   * or its own id string) or `said`/`saId` (an integration id), exactly one of the two (400). It
   * must be of the caller's account and within its reach, else 404.
   */
  async uploadTarget(auth: AuthContext, fields: ReadonlyMap<string, string>): Promise<Omit<Upload, 'file' | 'type'>> {
    const text = (name: string) => {
      const value = fields.get(name)?.trim();
      return value === '' ? undefined : value;
    };
    const source = text('source');
    const said = text('said');
    const saId = text('saId');
    if (said !== undefined && saId !== undefined && said !== saId) {
      throw invalid('said and saId name different integrations', [{ path: 'body.saId', message: 'differs from said' }]);
    }
    const integration = said ?? saId;
    const field = said !== undefined ? 'said' : 'saId';
    if (source !== undefined && integration !== undefined) {
      throw invalid(`Give exactly one of source or ${field}, not both`, [
        { path: 'body.source', message: `cannot be combined with ${field}` },
      ]);
    }
    if (source === undefined && integration === undefined) {
      throw invalid('Give exactly one of source or said', [{ path: 'body.source', message: 'is required when said is absent' }]);
    }
    const scope = await scopeOf(this.db, auth);

    if (integration !== undefined) {
      if (!/^\d{1,15}$/.test(integration))
        throw invalid(`${field} must be an integer`, [{ path: `body.${field}`, message: 'must be an integer' }]);
      const row = await findIntegration(this.db, auth.accountId, Number(integration));
      if (!row || !canUseIntegration(scope, row.id)) throw notFound('Integration not found');
      return { integrationId: row.id, shape: shapeOf(row.type) };
    }

    const key = source;
    if (key === undefined)
      throw invalid('Give exactly one of source or said', [{ path: 'body.source', message: 'is required when said is absent' }]);
    if (key.length > 255) throw invalid('source is too long', [{ path: 'body.source', message: 'is too long' }]);
    let channel = /^\d{1,15}$/.test(key)
      ? await repo.findChannelForUpload(this.db, auth.accountId, { realId: Number(key) }, scope.integrations)
      : undefined;
    channel ??= await repo.findChannelForUpload(this.db, auth.accountId, { externalId: key }, scope.integrations);
    if (!channel) throw notFound('Source not found');
    return { integrationId: channel.integration_id, shape: shapeOf(channel.integration_type) };
  }

  private view(row: FileRow): StoredFile {
    const base = this.deps.config.publicUrl?.replace(/\/+$/, '') ?? '';
    return {
      id: row.id,
      accountId: row.account_id,
      num: row.num,
      name: row.name,
      mime: row.mime,
      size: row.size,
      md5: row.md5,
      url: base + filePath(row.id, row.name),
      createdAt: row.created_at,
    };
  }
}

const shapeOf = (type: string) => integrationTypeInfo(type)?.uploadShape ?? 'mime-name-path';

const tooLarge = (max: number) => new AppError(413, 'payload_too_large', `The file is larger than the upload limit of ${max} bytes`);

/**
 * The source with its leading bytes checked before any byte goes on: `check` sees the first
 * {@link SNIFF_BYTES} bytes (or the whole file when shorter, possibly none) and throws to refuse.
 * Failures of the source itself come out as {@link SourceStreamError}.
 */
async function* guarded(source: Readable | AsyncIterable<Uint8Array>, check: (head: Buffer) => void): AsyncGenerator<Buffer> {
  const iterator = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  let head: Buffer[] = [];
  let headLength = 0;
  let checked = false;
  let ended = false;
  try {
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } catch (err) {
        ended = true;
        throw new SourceStreamError(err);
      }
      if (next.done) {
        ended = true;
        break;
      }
      const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      if (checked) {
        yield chunk;
        continue;
      }
      head.push(chunk);
      headLength += chunk.length;
      if (headLength < SNIFF_BYTES) continue;
      const all = Buffer.concat(head);
      head = [];
      check(all);
      checked = true;
      yield all;
    }
    if (!checked) {
      const all = Buffer.concat(head);
      check(all);
      if (all.length) yield all;
    }
  } finally {
    // Stopped early (refused, or the store failed): let the source go (a stream is destroyed).
    if (!ended) await iterator.return?.();
  }
}

/**
 * A file name safe to store and show: no directories, no control or bidirectional-override
 * characters, at most 255 characters (keeping the extension); `file<.ext>` when none was given.
 */
export function cleanFilename(raw: string | undefined, mime: string): string {
  let name = (raw ?? '')
    .normalize('NFC')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control and bidi characters are what this removes from file names
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '')
    .replace(/[\\/]/g, '_')
    .trim();
  if (name === '' || name === '.' || name === '..') name = `file${extensionOf(mime)}`;
  const chars = Array.from(name);
  if (chars.length > MAX_NAME) {
    const dot = name.lastIndexOf('.');
    const ext = dot > 0 && name.length - dot <= 16 ? Array.from(name.slice(dot)) : [];
    name = [...chars.slice(0, MAX_NAME - ext.length), ...ext].join('');
  }
  return name;
}
