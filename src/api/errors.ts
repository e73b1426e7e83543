import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { AppError, type ErrorDetail } from '../domain/errors.js';
import { VERSION_TRAITS, versionOfUrl, type VersionTraits } from './versions.js';
import { isUnstorableValue } from '../db/errors.js';

/** docs/api/errors.md error body of v1.2 and v1.3. */
export const CurrentErrorBody = Type.Object(
  {
    error: Type.String(),
    code: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
    requestId: Type.Optional(Type.String()),
  },
  { title: 'Error', description: 'Error (v1.2, v1.3)' },
);

/** The v1.1 error body, as before the format changed. */
export const LegacyErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    message: Type.String(),
    requestId: Type.Optional(Type.String()),
  },
  { title: 'ErrorV11', description: 'Error (v1.1)' },
);

export function errorResponses(traits: VersionTraits) {
  const body = traits.errorFormat === 'legacy' ? LegacyErrorBody : CurrentErrorBody;
  return { '4xx': body, '5xx': body } as unknown as Record<number, typeof body>;
}

interface ErrorInfo {
  status: number;
  code: string;
  message: string;
  details?: ErrorDetail[];
  retryAfter?: number;
}

const CODE_BY_STATUS: Record<number, string> = {
  400: 'validation_failed',
  401: 'unauthorized',
  402: 'account_expired',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'channel_rejected',
  429: 'rate_limited',
};

const FASTIFY_ERRORS: Record<string, { status: number; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, message: 'Unsupported Content-Type' },
  FST_ERR_CTP_INVALID_TYPE: { status: 415, message: 'Unsupported Content-Type' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, message: 'Request body is too large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, message: 'Request body is empty' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, message: 'Malformed JSON body' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, message: 'Invalid Content-Length' },
};

type ValidationEntry = NonNullable<FastifyError['validation']>[number];

function detailOf(context: string, v: ValidationEntry): ErrorDetail {
  const params = v.params as { missingProperty?: string; propertyName?: string } | undefined;
  const missing = params?.missingProperty;
  // A key a `propertyNames` schema refuses (an unknown setting).
  const unknown = v.keyword === 'propertyNames' ? params?.propertyName : undefined;
  const segments = v.instancePath.split('/').filter(Boolean);
  if (missing ?? unknown) segments.push((missing ?? unknown) as string);
  const allowed = (v.params as { allowedValues?: unknown[] } | undefined)?.allowedValues;
  const message = missing ? 'is required' : unknown ? 'is not a known field' : (v.message ?? 'is invalid');
  return { path: [context, ...segments].join('.'), message: allowed ? `${message}: ${allowed.join(', ')}` : message };
}

function describe(err: FastifyError | AppError | Error, traits: VersionTraits): ErrorInfo {
  if (err instanceof AppError) {
    return { status: err.statusCode, code: err.code, message: err.message, details: err.details, retryAfter: err.retryAfter };
  }
  const fe = err as FastifyError;
  if (fe.validation) {
    const context = fe.validationContext ?? 'body';
    if (context === 'params' && traits.invalidPathParamStatus === 404) {
      return { status: 404, code: 'not_found', message: 'Not found' };
    }
    const details = fe.validation.map((v) => detailOf(context, v));
    const first = details[0];
    const message = first ? `Invalid request: ${first.path} ${first.message}` : 'Invalid request';
    return { status: 400, code: 'validation_failed', message, details };
  }
  const known = fe.code ? FASTIFY_ERRORS[fe.code] : undefined;
  if (known) return { status: known.status, code: CODE_BY_STATUS[known.status], message: known.message };
  if (err instanceof SyntaxError) return { status: 400, code: 'validation_failed', message: 'Malformed JSON body' };
  if (isUnstorableValue(err)) {
    return {
      status: 400,
      code: 'validation_failed',
      message: 'Invalid request: a value contains a NUL character or a number out of range',
    };
  }
  const status = fe.statusCode;
  if (status && status >= 400 && status < 500) {
    return { status, code: CODE_BY_STATUS[status] ?? 'bad_request', message: err.message };
  }
  return { status: 500, code: 'internal_error', message: 'Internal server error' };
}

function send(reply: FastifyReply, request: FastifyRequest, info: ErrorInfo) {
  const version = request.routeOptions.config?.apiVersion ?? versionOfUrl(request.url);
  const traits = VERSION_TRAITS[version ?? 'v1.3'];
  if (info.retryAfter) reply.header('retry-after', String(info.retryAfter));
  const requestId = info.status >= 500 ? String(request.id) : undefined;
  reply.code(info.status);
  if (traits.errorFormat === 'legacy') {
    return reply.send({ statusCode: info.status, message: info.message, requestId });
  }
  return reply.send({ error: info.message, code: info.code, details: info.details, requestId });
}

/** The single error handler: domain and framework errors become the version's error body. */
export function errorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const version = request.routeOptions.config?.apiVersion ?? versionOfUrl(request.url);
  const info = describe(err, VERSION_TRAITS[version ?? 'v1.3']);
  if (info.status >= 500) request.log.error({ err, reqId: request.id }, 'request failed');
  else request.log.debug({ code: info.code, status: info.status }, info.message);
  return send(reply, request, info);
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return send(reply, request, {
    status: 404,
    code: 'not_found',
    message: `Route ${request.method} ${request.url.split('?')[0]} not found`,
  });
}
