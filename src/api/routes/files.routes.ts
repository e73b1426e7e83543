import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { AppError, notFound } from '../../domain/errors.js';
import type { StoredFile } from '../../domain/files/files.types.js';
import type { Services } from '../../services.js';
import type { ByteRange } from '../../storage/storage.js';
import { CurrentErrorBody } from '../errors.js';

const Params = Type.Object({
  id: Type.String({ maxLength: 64, description: 'File id (22 characters, base64url) from the upload answer' }),
  name: Type.String({ maxLength: 1024, description: 'File name; informative only: the id alone finds the file' }),
});

const Bytes = (description: string) => ({ description, content: { '*/*': { schema: { type: 'string', format: 'binary' } } } });

/**
 * Files are immutable (a new upload is a new id): caches may keep them. The sandbox policy keeps
 * anything a browser might still render from running script on this origin.
 */
const FIXED_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
  'cache-control': 'public, max-age=31536000, immutable',
  'accept-ranges': 'bytes',
};

/**
 * `GET /files/<id>/<name>`: the uploaded file, unversioned and without authentication (the id is
 * 128 random bits; channel providers fetch attachments from here). Range requests (one range) and
 * `If-None-Match` are honoured. An unknown id answers 404 (JSON).
 */
export function registerFileRoutes(app: FastifyInstance, services: Services): void {
  app.get<{ Params: { id: string; name: string } }>(
    '/files/:id/:name',
    {
      schema: {
        tags: ['files'],
        summary: 'Download an uploaded file (no authentication: the id in the URL is unguessable)',
        description: [
          'Streams the file with its stored `Content-Type` and `Content-Length`. `Content-Disposition` is `inline`',
          'for images, video and audio and `attachment` otherwise, with the name as RFC 5987 `filename*`.',
          'Sent with `X-Content-Type-Options: nosniff`, a sandboxing `Content-Security-Policy`, an `ETag` (the MD5)',
          'and long-lived cache headers: a file never changes. `Range: bytes=a-b` (one range) answers 206,',
          'an unsatisfiable range 416; `If-None-Match` with the ETag answers 304. Unknown id: 404.',
        ].join(' '),
        security: [],
        params: Params,
        response: {
          200: Bytes('The file'),
          206: Bytes('The requested range of the file'),
          304: { description: 'Not modified (If-None-Match matched the ETag)', type: 'null' },
          404: CurrentErrorBody,
          416: CurrentErrorBody,
        },
      },
    },
    async (req, reply) => {
      const found = await services.files.download(req.params.id);
      if (!found) throw notFound('File not found');
      const { file } = found;
      const etag = `"${file.md5}"`;
      reply.headers({
        ...FIXED_HEADERS,
        etag,
        'last-modified': new Date(file.createdAt).toUTCString(),
        'content-disposition': contentDisposition(file),
      });
      if (matchesEtag(req.headers['if-none-match'], etag)) return reply.code(304).send();

      const ifRange = req.headers['if-range'];
      const range = ifRange === undefined || ifRange === etag ? parseRange(req.headers.range, file.size) : undefined;
      if (range === 'unsatisfiable') {
        reply.header('content-range', `bytes */${file.size}`);
        throw new AppError(416, 'range_not_satisfiable', 'The requested range is outside the file');
      }
      const stream = await found.open(range);
      if (!stream) {
        req.log.warn({ fileId: file.id }, 'file row without stored bytes');
        throw notFound('File not found');
      }
      reply.type(file.mime);
      if (range) {
        reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${file.size}`);
        reply.header('content-length', range.end - range.start + 1);
      } else {
        reply.header('content-length', file.size);
      }
      return reply.send(stream);
    },
  );
}

function contentDisposition(file: StoredFile): string {
  const kind = /^(image|video|audio)\//.test(file.mime) ? 'inline' : 'attachment';
  const ascii = file.name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  // RFC 5987 attr-char: encodeURIComponent leaves !'()* unescaped, which attr-char does not allow.
  const encoded = encodeURIComponent(file.name).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

/**
 * One `bytes=` range of a file of `size` bytes; undefined (send it whole) when absent, malformed
 * or several ranges; 'unsatisfiable' when it starts past the end.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? Infinity : Number(m[2]);
  if (last < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}
