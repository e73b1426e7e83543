import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';

/**
 * Body limits of the routes anyone may call, sized to what they take, so an anonymous caller
 * cannot make the server read and parse a megabyte (PARLEY_BODY_LIMIT) to be refused. A declared
 * Content-Length above the limit is answered 413 before the body is read.
 */

/** Login, registration, token refresh, plugin sign-in, invitation: a few short strings. */
export const AUTH_BODY_LIMIT = 16 * 1024;

/** The widget's visitor protocol: a message of at most 4,000 characters (6 bytes each escaped), pre-chat fields. */
export const VISITOR_BODY_LIMIT = 64 * 1024;

/** Messenger webhooks (/channels/*): one Telegram update or Viber callback, quoted messages included. */
export const CHANNEL_WEBHOOK_BODY_LIMIT = 256 * 1024;

/** Room for a multipart body's boundaries, part headers and small fields around its one file. */
export const MULTIPART_ENVELOPE = 64 * 1024;

/**
 * An onRequest hook for the routes that take files, whose parser streams and so has no body limit
 * of fastify's: a declared Content-Length that cannot fit `fileLimit` (plus the multipart envelope)
 * is answered 413 at once, before a byte of the body is read. The connection closes after the
 * answer, since the unread body cannot be skipped. Chunked bodies are still counted as they stream.
 */
export function refuseDeclaredOversize(fileLimit: number) {
  const max = fileLimit + MULTIPART_ENVELOPE;
  return async function refuseOversize(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const declared = Number(req.headers['content-length']);
    if (!Number.isFinite(declared) || declared <= max) return;
    reply.header('connection', 'close');
    throw new AppError(413, 'payload_too_large', `Request body is too large (at most ${fileLimit} bytes of file)`);
  };
}
