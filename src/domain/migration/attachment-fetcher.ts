import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { BlockedAddressError, guardedLookup, isBlockedAddress } from '../../net/address-guard.js';
import type { FilesService } from '../files/files.service.js';
import type { StoredFile } from '../files/files.types.js';

/**
 * Downloads one attachment of the source into this installation's file storage. Files on the
 * source's own origin (the operator's `--from`) are fetched directly; any other host goes through
 * the outbound address guard (src/net/address-guard.ts: no loopback, private or metadata address,
 * checked on the address the socket connects to). Size and type limits are those of uploads
 * (FilesService.store). Redirects are not followed.
 */
export interface AttachmentSource {
  /** The origin of `--from` (`https://inbox.example.com`). */
  origin: string;
  /** Bearer token sent to the source's own origin only. */
  token: () => string;
  allowPrivate: boolean;
  timeoutMs: number;
  /**
   * Hosts whose name did not resolve (ENOTFOUND) during this run: their other files fail at once
   * instead of each waiting for the resolver (seconds each when it times out before answering).
   */
  unresolved: Set<string>;
}

export class AttachmentError extends Error {}

const guardedAgents = {
  http: new http.Agent({ lookup: guardedLookup as unknown as net.LookupFunction }),
  https: new https.Agent({ lookup: guardedLookup as unknown as net.LookupFunction }),
};

export async function fetchAttachment(
  files: FilesService,
  accountId: number,
  source: AttachmentSource,
  rawUrl: string,
  name: string | undefined,
): Promise<StoredFile> {
  let url: URL;
  try {
    url = new URL(rawUrl, source.origin);
  } catch {
    throw new AttachmentError('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AttachmentError(`${url.protocol} URLs are not fetched`);
  const own = url.origin === source.origin;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!own && !source.allowPrivate && isBlockedAddress(host)) throw new AttachmentError(`refused address ${host}`);
  if (source.unresolved.has(host)) throw new AttachmentError(`host ${host} not found`);
  const lib = url.protocol === 'https:' ? https : http;
  const agent = own || source.allowPrivate ? undefined : url.protocol === 'https:' ? guardedAgents.https : guardedAgents.http;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = lib.get(
      url,
      { agent, headers: own ? { authorization: `Bearer ${source.token()}` } : {}, timeout: source.timeoutMs },
      resolve,
    );
    req.on('timeout', () => req.destroy(new AttachmentError(`no answer in ${source.timeoutMs} ms`)));
    req.on('error', (err) => reject(err instanceof BlockedAddressError ? new AttachmentError(err.message) : err));
  }).catch((err: Error) => {
    if ((err as NodeJS.ErrnoException).code === 'ENOTFOUND') {
      source.unresolved.add(host);
      throw new AttachmentError(`host ${host} not found`);
    }
    throw err instanceof AttachmentError ? err : new AttachmentError(err.message);
  });
  if (res.statusCode !== 200) {
    res.resume();
    throw new AttachmentError(`the file's server answered ${res.statusCode}`);
  }
  const mime = res.headers['content-type'] || 'application/octet-stream';
  const filename = name || decodeURIComponent(url.pathname.split('/').pop() || '') || 'file';
  try {
    return await files.store(accountId, res, { filename, mime });
  } catch (err) {
    res.destroy();
    throw new AttachmentError((err as Error).message);
  }
}
