import { refuseDeclaredOversize } from '../body-limits.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart, { type Multipart } from '@fastify/multipart';
import { Type } from 'typebox';
import type { Config } from '../../config.js';
import { AppError, invalid } from '../../domain/errors.js';
import type { UploadPart } from '../../domain/files/files.types.js';
import { ALL, defineRoute, type RouteDef } from '../route.js';
import { serializeUpload } from '../serializers/upload.serializer.js';
import { VERSION_TRAITS } from '../versions.js';

const Str = (description: string) => Type.String({ description });

const IdUrl = Type.Object(
  { id: Type.Integer({ description: 'File id (integer alias)' }), url: Str('Public URL of the file') },
  {
    title: 'id-url',
    description: 'social2_personal, social2_group',
  },
);
const TypeFilenameSrc = Type.Object(
  { type: Str('Media type (mime)'), filename: Str('File name'), src: Str('Public URL of the file') },
  {
    title: 'type-filename-src',
    description: 'msgra, msgra2',
  },
);
const Parts = Type.Object(
  {
    parts: Type.Integer({ description: 'Number of pieces the file was split into (always 1 here)' }),
    fileId: Str('File id'),
    mime: Str('Media type'),
    filename: Str('File name'),
    md5: Str('Hex MD5 of the bytes'),
  },
  { title: 'parts', description: 'msgrb_personal' },
);
const MimeNameUrl = Type.Object(
  {
    mime: Str('Media type'),
    name: Str('File name'),
    url: Str('Public URL of the file'),
    type: Str('`photo` or `doc`'),
    size: Str('Size in bytes, as a decimal string'),
  },
  { title: 'mime-name-url', description: 'photo network (photonetV2, photonetVOff, photonetV3), msgrc_bot, social3' },
);
const MimeNamePath = Type.Object(
  { mime: Str('Media type'), name: Str('File name'), path: Str('Path of the file URL on this server') },
  {
    title: 'mime-name-path',
    description: 'all other integration types',
  },
);

const Media = Type.Union([IdUrl, TypeFilenameSrc, Parts, MimeNameUrl, MimeNamePath], {
  description:
    'Uploaded media object, in the shape of the integration type (docs/api/resources.md, Uploaded media object); pass it back as `message.attachment.media` when sending',
});
const UploadType = Type.String({ enum: ['photo', 'doc'], description: '`photo` for images, `doc` otherwise' });

const Answer = Type.Object({ type: UploadType, media: Media }, { description: 'Upload answer' });
const NestedAnswer = Type.Object(
  { type: UploadType, media: Type.Object({ type: UploadType, media: Media }) },
  { description: 'Upload answer (v1.1: the media object nested twice)' },
);

/**
 * The form, for the document. Fields are read by streaming the parts (never attached to the body),
 * so this schema only ever sees `{}`: `media` and the choice between `source` and `said` are
 * enforced by the handler, and are described here rather than marked required.
 */
const UploadForm = Type.Object({
  media: Type.Optional(
    Type.String({
      format: 'binary',
      description: 'The file (required). Its part carries its own Content-Type, which must match the file content',
    }),
  ),
  source: Type.Optional(
    Type.String({ maxLength: 255, description: 'Channel: its realId, or its own id string (exactly one of source or said)' }),
  ),
  said: Type.Optional(Type.String({ maxLength: 20, description: 'Integration id (exactly one of source or said)' })),
  saId: Type.Optional(Type.String({ maxLength: 20, description: 'Same as said' })),
});

export const uploadRoutes = [
  defineRoute({
    versions: ALL,
    method: 'POST',
    url: '/messaging/upload',
    // The multipart parser leaves the body empty: the handler streams the parts.
    optionalBody: true,
    schema: (version) => ({
      tags: ['messaging'],
      summary: 'Upload a file to send as an attachment',
      description: [
        '`multipart/form-data` with the file part `media` (its own `Content-Type` names the type; the leading bytes',
        'must match it: 400 otherwise; HTML, SVG, scripts and programs: 415) and exactly one of `source` (a channel',
        'realId or id string) or `said`/`saId` (an integration id), 400 for both or neither, 404 when not in reach.',
        'One file, at most PARLEY_UPLOAD_LIMIT bytes (default 50 MiB; 413 above it). Another body type: 415.',
        'The answer carries the media object in the shape of the integration type; v1.1 nests it twice.',
        'Uploading works for an expired account too (only sending answers 402).',
      ].join(' '),
      body: { content: { 'multipart/form-data': { schema: UploadForm } } } as unknown as typeof UploadForm,
      response: { 200: VERSION_TRAITS[version].uploadNestedTwice ? NestedAnswer : Answer },
    }),
    handler: async (req, reply, { services, auth, traits }) => {
      if (!req.isMultipart()) {
        throw new AppError(415, 'unsupported_media_type', 'Upload needs a multipart/form-data body');
      }
      try {
        const upload = await services.files.upload(auth, partsOf(req));
        return serializeUpload(upload, traits, originOf(req));
      } catch (err) {
        // The rest of the request body may be unread: this connection cannot carry another request.
        reply.header('connection', 'close');
        throw err;
      }
    },
  }),
];

/** Routes that take multipart bodies: app.ts registers them in a scope with the multipart parser. */
const MULTIPART_ROUTES: ReadonlySet<RouteDef> = new Set(uploadRoutes);
export const takesFiles = (route: RouteDef): boolean => MULTIPART_ROUTES.has(route);

/** The multipart parser with explicit limits, for the scope of {@link takesFiles} routes only. */
export async function registerMultipart(scope: FastifyInstance, config: Config): Promise<void> {
  scope.addHook('onRequest', refuseDeclaredOversize(config.uploadLimit));
  await scope.register(multipart, {
    limits: {
      // One byte more than allowed reaches the service, whose own count answers 413.
      fileSize: config.uploadLimit + 1,
      files: 1,
      fields: 10,
      fieldSize: 1024,
      fieldNameSize: 100,
      parts: 12,
      headerPairs: 50,
    },
    throwFileSizeLimit: false,
    // `media` is the file whether or not the client named it.
    isPartAFile: (fieldName, contentType, fileName) =>
      fieldName === 'media' || fileName !== undefined || contentType === 'application/octet-stream',
  });
}

/** The request's parts in the domain's terms; parser failures become 400/413 errors. */
async function* partsOf(req: FastifyRequest): AsyncGenerator<UploadPart> {
  const iterator = req.parts()[Symbol.asyncIterator]();
  let done = false;
  try {
    for (;;) {
      let next: IteratorResult<Multipart>;
      try {
        next = await iterator.next();
      } catch (err) {
        done = true;
        throw multipartError(err);
      }
      if (next.done) {
        done = true;
        return;
      }
      const part = next.value;
      if (part.type === 'file') {
        const file = part.file;
        yield {
          kind: 'file',
          name: part.fieldname,
          filename: part.filename || undefined,
          contentType: part.mimetype,
          stream: file,
          truncated: () => file.truncated,
        };
      } else {
        const value = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        yield { kind: 'field', name: part.fieldname, value, truncated: part.valueTruncated };
      }
    }
  } finally {
    // The service stopped early (a refusal): end the parser's iteration too.
    if (!done) await iterator.return?.(undefined);
  }
}

function multipartError(err: unknown): Error {
  const code = (err as { code?: string } | null)?.code;
  switch (code) {
    case 'FST_FILES_LIMIT':
      return new AppError(413, 'payload_too_large', 'Only one file may be uploaded per request');
    case 'FST_FIELDS_LIMIT':
      return new AppError(413, 'payload_too_large', 'Too many form fields');
    case 'FST_PARTS_LIMIT':
      return new AppError(413, 'payload_too_large', 'Too many form parts');
    case 'FST_PROTO_VIOLATION':
      return invalid('A form field name is not allowed');
    case 'FST_INVALID_JSON_FIELD_ERROR':
      return invalid('A form field declared as JSON is not valid JSON');
    default:
      return invalid('Malformed multipart body');
  }
}

/** `scheme://host` of the request, for answers when PARLEY_PUBLIC_URL is not configured. */
function originOf(req: FastifyRequest): string | undefined {
  const host = req.host;
  if (!host || !/^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/.test(host)) return undefined;
  return `${req.protocol}://${host}`;
}
