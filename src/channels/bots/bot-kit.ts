import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Config } from '../../config.js';
import type { Logger } from '../../domain/context.js';
import { AppError } from '../../domain/errors.js';
import type { StoredFile } from '../../domain/files/files.types.js';
import type { Attachment, AttachmentType } from '../../domain/channels/channel.js';
import { ChannelRejectedError } from '../../domain/channels/channel.js';
import { download } from './http.js';

/**
 * What the bot adapters need from the rest of Parley, as functions: they never reach the database
 * themselves. Built once by {@link BotChannels}; tests replace `wait` to observe retry delays.
 */
export interface BotKit {
  config: Config;
  log: Logger;
  /** Stores downloaded bytes as a file of the account (Parley's storage, public URL). */
  saveFile(accountId: number, bytes: Buffer, meta: { filename: string; mime: string }): Promise<StoredFile>;
  /** An uploaded file with its bytes (outbound media), or undefined. */
  readFile(fileId: string): Promise<{ file: StoredFile; bytes: Buffer } | undefined>;
  /** The provider refused the integration's token: its status becomes `auth failure`. */
  authFailed(integrationId: number, reason: string): Promise<void>;
  /** Waits (a provider's retry-after); tests replace it. */
  wait(ms: number): Promise<void>;
  /** The per-integration secret a provider echoes on webhook calls (Telegram secret_token). */
  webhookSecret(provider: string, integrationId: number): string;
}

/** Builds the secret of {@link BotKit.webhookSecret} from the installation's secret: nothing stored. */
export function webhookSecretOf(key: Uint8Array) {
  const derived = Buffer.from(crypto.hkdfSync('sha256', key, Buffer.alloc(0), 'parley bot webhook secrets v1', 32));
  return (provider: string, integrationId: number) =>
    crypto.createHmac('sha256', derived).update(`${provider}:${integrationId}`).digest('base64url');
}

/** Constant-time string comparison (secrets, signatures). */
export function sameSecret(given: string | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/**
 * Stores bytes declared as `mime`; when the bytes contradict the declaration (or the type may not
 * be served), they are kept as a generic binary whose type storage detects from the bytes.
 */
export async function saveWithFallback(save: (mime: string) => Promise<StoredFile>, mime: string): Promise<StoredFile> {
  try {
    return await save(mime);
  } catch (err) {
    if (err instanceof AppError && (err.statusCode === 400 || err.statusCode === 415) && mime !== 'application/octet-stream') {
      return save('application/octet-stream');
    }
    throw err;
  }
}

/**
 * A provider file as a History attachment: downloaded into Parley's storage. A file the provider
 * will not hand out (too big for bots, gone) becomes an attachment without URL, keeping its name,
 * so the message itself is never lost; a provider outage propagates (the update is retried).
 */
export async function mediaAttachment(
  kit: BotKit,
  accountId: number,
  type: AttachmentType,
  source: { url: () => Promise<string>; filename: string; mime: string; size?: number; headers?: Record<string, string> },
): Promise<Attachment> {
  try {
    const url = await source.url();
    const got = await download(url, { maxBytes: kit.config.uploadLimit, timeoutMs: kit.config.sendTimeoutMs, headers: source.headers });
    const declared = source.mime || got.mime.split(';')[0].trim() || 'application/octet-stream';
    const file = await saveWithFallback((mime) => kit.saveFile(accountId, got.bytes, { filename: source.filename, mime }), declared);
    return { type, url: file.url, text: file.name, filesize: file.size };
  } catch (err) {
    if (!(err instanceof ChannelRejectedError)) throw err;
    kit.log.warn({ reason: err.message, filename: source.filename }, 'provider file not downloaded; kept without URL');
    return { type, url: '', text: source.filename, ...(source.size ? { filesize: source.size } : {}) };
  }
}

/** A map link for a shared location. */
export function mapUrl(lat: number, lon: number): string {
  return `https://www.openstreetmap.org/?mlat=${lat}&mlon=${lon}#map=16/${lat}/${lon}`;
}

/** Seconds a provider asked to wait, as a delay that fits the send deadline, or undefined. */
export function retryFits(retryAfterSeconds: number, startedAt: number, sendTimeoutMs: number): boolean {
  const elapsed = Date.now() - startedAt;
  return retryAfterSeconds * 1000 + 500 < sendTimeoutMs - elapsed;
}
