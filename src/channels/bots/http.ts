import { parseBoundedJson } from '../../domain/json-limits.js';
import { ChannelFailedError, ChannelRejectedError, ChannelTimeoutError } from '../../domain/channels/channel.js';

/**
 * HTTP for the bot providers (Telegram, Viber): fetch (undici) with a deadline, provider outages as
 * ChannelFailedError, deadlines as ChannelTimeoutError. No SDK: both APIs are a few JSON calls.
 */

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
}

/** One request; the caller reads the provider's own error format from the answer. */
export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string | FormData; timeoutMs: number; signal?: AbortSignal },
): Promise<HttpAnswer> {
  const signals = [AbortSignal.timeout(init.timeoutMs), ...(init.signal ? [init.signal] : [])];
  let res: Response;
  try {
    res = await fetch(url, { method: init.method ?? 'POST', headers: init.headers, body: init.body, signal: AbortSignal.any(signals) });
    return { status: res.status, headers: res.headers, text: await res.text() };
  } catch (err) {
    throw transportError(err, init.timeoutMs);
  }
}

/** Downloads a file at most `maxBytes` long (a longer one is refused: nothing is kept). */
export async function download(
  url: string,
  opts: { maxBytes: number; timeoutMs: number; headers?: Record<string, string> },
): Promise<{ bytes: Buffer; mime: string }> {
  let res: Response;
  try {
    res = await fetch(url, { headers: opts.headers, signal: AbortSignal.timeout(opts.timeoutMs) });
  } catch (err) {
    throw transportError(err, opts.timeoutMs);
  }
  if (res.status >= 500) throw new ChannelFailedError(`file download answered ${res.status}`);
  if (res.status >= 400) throw new ChannelRejectedError(`file download answered ${res.status}`);
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > opts.maxBytes) throw new ChannelRejectedError(`file is larger than ${opts.maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength;
      if (size > opts.maxBytes) throw new ChannelRejectedError(`file is larger than ${opts.maxBytes} bytes`);
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    if (err instanceof ChannelRejectedError) throw err;
    throw transportError(err, opts.timeoutMs);
  }
  return { bytes: Buffer.concat(chunks), mime: res.headers.get('content-type') ?? 'application/octet-stream' };
}

function transportError(err: unknown, timeoutMs: number): Error {
  const name = (err as { name?: string } | null)?.name;
  if (name === 'TimeoutError') return new ChannelTimeoutError(`no answer within ${timeoutMs} ms`);
  if (name === 'AbortError') return new ChannelFailedError('request aborted');
  return new ChannelFailedError(`provider unreachable: ${String((err as Error)?.message ?? err)}`);
}

/**
 * Splits a text into parts of at most `limit` UTF-16 code units (what both providers count),
 * preferring a line break, then a space, in the second half of the window; never inside a
 * surrogate pair. The parts joined give the text back.
 */
export function splitText(text: string, limit: number): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > limit) {
    let cut = -1;
    for (const sep of ['\n', ' ']) {
      const at = rest.lastIndexOf(sep, limit - 1);
      if (at >= limit / 2) {
        cut = at + 1;
        break;
      }
    }
    if (cut < 0) {
      cut = limit;
      const code = rest.charCodeAt(cut - 1);
      if (code >= 0xd800 && code <= 0xdbff) cut--;
    }
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest.length || !parts.length) parts.push(rest);
  return parts;
}

/**
 * Parses a provider's JSON keeping the named integer fields as strings: Viber's `message_token`
 * is a 64-bit integer that a JS number would round.
 */
export function parseJsonKeepingIds(raw: string, fields: readonly string[]): unknown {
  let text = raw;
  for (const field of fields) {
    text = text.replace(new RegExp(`(?<!\\\\)"${field}"\\s*:\\s*(-?\\d+)`, 'g'), `"${field}":"$1"`);
  }
  return parseBoundedJson(text);
}
