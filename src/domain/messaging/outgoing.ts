import { ChannelTimeoutError, type Attachment } from '../channels/channel.js';
import type { MessageRow } from '../../db/schema.js';
import type { OutgoingRecord } from '../conversations/conversations.types.js';
import type { Logger } from '../context.js';
import { invalid } from '../errors.js';
import type { IdInput } from './messaging.types.js';

/** Small rules of outgoing messages that need no database. */

/** A positive integer id from a number or a numeric string; undefined for anything else. */
export function parseId(value: IdInput): number | undefined {
  const n = typeof value === 'number' ? value : /^\s*\d{1,16}\s*$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

export function requireId(value: IdInput, path: string): number {
  const id = parseId(value);
  if (id === undefined) throw invalid(`${path} must be a positive integer`, [{ path, message: 'must be a positive integer' }]);
  return id;
}

/** What a send carries, checked: text, an attachment, or a template (send form B). */
export interface OutgoingContent {
  text: string;
  attachment?: Attachment;
  templateName?: string;
}

/**
 * The rows a send becomes. A provider that made two messages of a text and a file (two ids)
 * gets two rows, text first; otherwise one row carries everything. The quote goes with the first.
 */
export function outgoingRecords(
  content: OutgoingContent,
  externalIds: readonly string[],
  extra: { replyTo: MessageRow | undefined; customId: string | null; at: number; texts?: readonly string[] },
): OutgoingRecord[] {
  const text = content.templateName !== undefined ? `[template ${content.templateName}]` : content.text;
  const attachments = content.attachment ? [content.attachment] : [];
  const ids = externalIds.filter((id) => typeof id === 'string' && id !== '');
  const base = { replyTo: extra.replyTo, customId: extra.customId, at: extra.at };
  // The provider split a long text: one row per part (the quote on the first), then the file.
  const parts = extra.texts;
  if (parts && parts.length > 1 && ids.length >= parts.length) {
    const records: OutgoingRecord[] = parts.map((part, i) => ({
      ...base,
      externalId: ids[i],
      text: part,
      attachments: [],
      replyTo: i === 0 ? extra.replyTo : undefined,
    }));
    if (attachments.length) {
      const fileId = ids[parts.length];
      if (fileId) records.push({ ...base, externalId: fileId, text: '', attachments, replyTo: undefined });
      else records[records.length - 1].attachments = attachments;
    }
    return records;
  }
  if (ids.length >= 2 && text && attachments.length) {
    return [
      { ...base, externalId: ids[0], text, attachments: [] },
      { ...base, externalId: ids[1], text: '', attachments, replyTo: undefined },
    ];
  }
  return [{ ...base, externalId: ids[0] ?? null, text, attachments }];
}

/**
 * Waits for a provider at most `ms`; then rejects with ChannelTimeoutError (504). The provider may
 * still accept afterwards: that is logged, since the message then exists there but not here.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, log: Logger, what: Record<string, unknown>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new ChannelTimeoutError(`no answer within ${ms} ms`));
    }, ms);
  });
  work.then(
    () => {
      if (timedOut) log.warn(what, 'channel accepted a message after the send timed out; it was not stored');
    },
    () => undefined,
  );
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** Milliseconds to the next UTC midnight, as whole seconds (at least 1): a daily limit's Retry-After. */
export function secondsToUtcMidnight(now: number): number {
  const day = 86_400_000;
  return Math.max(1, Math.ceil((Math.floor(now / day) * day + day - now) / 1000));
}

export const utcDay = (now: number) => Math.floor(now / 86_400_000);
