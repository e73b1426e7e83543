import type { FastifyRequest } from 'fastify';
import type { StoredFile } from '../../domain/files/files.types.js';
import { uploadTypeOf } from '../../domain/files/media.js';
import type { Config } from '../../config.js';

/** A visitor's uploaded file: what the widget shows and passes back as `fileId`. */
export function serializeVisitorFile(file: StoredFile) {
  return { id: file.id, name: file.name, mime: file.mime, size: file.size, url: file.url, type: uploadTypeOf(file.mime) };
}

/** `scheme://host` of the request, when its Host header is a plain host name. */
export function requestOrigin(req: FastifyRequest): string | undefined {
  const host = req.host;
  if (!host || !/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) return undefined;
  return `${req.protocol}://${host}`;
}

/** This server's base URL for snippets and the demo: PARLEY_PUBLIC_URL, else the request's origin. */
export function publicBase(config: Config, req: FastifyRequest): string {
  return config.publicUrl?.replace(/\/+$/, '') || requestOrigin(req) || '';
}

/** This server's own origin (its demo page may embed any widget). */
export function selfOrigin(config: Config, req: FastifyRequest): string | undefined {
  if (config.publicUrl) {
    try {
      return new URL(config.publicUrl).origin;
    } catch {
      // not a URL: fall back to the request
    }
  }
  return requestOrigin(req);
}
