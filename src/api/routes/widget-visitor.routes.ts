import { refuseDeclaredOversize, VISITOR_BODY_LIMIT } from '../body-limits.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { Type, type Static } from 'typebox';
import type { WebSocket } from 'ws';
import type { Services } from '../../services.js';
import { AppError, invalid } from '../../domain/errors.js';
import { LIMITS, WIDGET_LANGUAGES } from '../../domain/widget/widget.types.js';
import type { Visitor, VisitorRequest } from '../../domain/widget/widget-sessions.js';
import { CurrentErrorBody } from '../errors.js';
import { selfOrigin, serializeVisitorFile } from '../serializers/widget.serializer.js';

const tags = ['widget visitors'];
const security: never[] = [];

const Mode = Type.String({ enum: ['optional', 'required', 'off'] });
const PublicConfig = Type.Object(
  {
    key: Type.String(),
    title: Type.String(),
    greeting: Type.String(),
    color: Type.String(),
    preChat: Type.Object({ name: Mode, email: Mode, phone: Mode }),
    offline: Type.Boolean(),
    offlineMessage: Type.String(),
    identityVerification: Type.Boolean(),
    language: Type.String({
      enum: [...WIDGET_LANGUAGES],
      description: "The language of the widget's own texts: auto (the browser's), ru or en",
    }),
    defaultTexts: Type.Array(Type.String({ enum: ['title', 'greeting', 'offlineMessage'] }), {
      description: "The owner's texts still at Parley's default, which the widget shows in its language",
    }),
  },
  { description: 'What a visitor may know of a widget' },
);
const VisitorProfile = Type.Object({
  id: Type.String({ description: "The visitor's id: its profile socialId and channel id in Parley" }),
  name: Type.String(),
  email: Type.String(),
  phone: Type.String(),
  verified: Type.Boolean({ description: 'The identity was verified (identifier signed by the site)' }),
});
const VisitorAttachment = Type.Object({
  type: Type.String({ description: '`photo` or `doc`' }),
  url: Type.String({ description: 'File URL (a path when PARLEY_PUBLIC_URL is not set)' }),
  name: Type.String(),
  size: Type.Union([Type.Integer(), Type.Null()]),
});
export const VisitorMessage = Type.Object(
  {
    id: Type.String({ description: 'Message id (the same in pushes and history)' }),
    from: Type.String({ enum: ['visitor', 'agent'] }),
    text: Type.String(),
    attachments: Type.Array(VisitorAttachment),
    at: Type.Integer({ description: 'Unix milliseconds' }),
  },
  { description: 'A message of the visitor conversation' },
);
const Key = Type.String({ minLength: 1, maxLength: 80, description: 'Public widget key (wk_...)' });
const Session = Type.Object({
  token: Type.String({ description: 'Visitor token: keep it (localStorage) and send it as `Authorization: Bearer <token>`' }),
  resumed: Type.Boolean(),
  visitor: VisitorProfile,
  widget: PublicConfig,
});
const SessionBody = Type.Object({
  key: Key,
  token: Type.Optional(Type.String({ maxLength: 200, description: 'A token from an earlier session: resumes it' })),
  identifier: Type.Optional(
    Type.String({ minLength: 1, maxLength: LIMITS.identifier, description: "The site's user id (identity verification)" }),
  ),
  signature: Type.Optional(Type.String({ maxLength: 128, description: 'Hex HMAC-SHA256 of identifier with the widget secret' })),
  name: Type.Optional(Type.String({ maxLength: LIMITS.name })),
  email: Type.Optional(Type.String({ maxLength: LIMITS.email })),
  phone: Type.Optional(Type.String({ maxLength: LIMITS.phone })),
});
const MessageBody = Type.Object({
  clientId: Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: '^[A-Za-z0-9_-]+$',
    description: 'Client-made id: a retry with the same id is stored once',
  }),
  text: Type.Optional(Type.String({ maxLength: LIMITS.text })),
  fileId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Id of a file uploaded with POST /widget/v1/uploads' })),
});
const HistoryQuery = Type.Object({
  before: Type.Optional(Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1, description: 'The `cursor` of the previous page' })),
});
const History = Type.Object({
  messages: Type.Array(VisitorMessage, { description: 'Oldest first' }),
  cursor: Type.Integer({ description: 'Pass as `before` for the earlier page; -1: no more' }),
});
const VisitorFile = Type.Object({
  id: Type.String(),
  name: Type.String(),
  mime: Type.String(),
  size: Type.Integer(),
  url: Type.String(),
  type: Type.String({ enum: ['photo', 'doc'] }),
});
const UploadForm = Type.Object({ file: Type.Optional(Type.String({ format: 'binary', description: 'The file (required)' })) });

const errors = { 400: CurrentErrorBody, 401: CurrentErrorBody, 403: CurrentErrorBody, 404: CurrentErrorBody, 429: CurrentErrorBody };

/**
 * The site widget's public protocol under `/widget/v1`: no employee token; a widget key
 * to start, then the visitor token. Cross-origin by design: CORS headers echo the caller's origin,
 * and the service refuses origins a widget does not allow (403). Rate limits answer 429 with
 * Retry-After.
 */
export async function registerWidgetVisitorRoutes(app: FastifyInstance, services: Services): Promise<void> {
  const { config } = services.deps;
  const visitorRequest = (req: FastifyRequest): VisitorRequest => ({
    origin: typeof req.headers.origin === 'string' ? req.headers.origin : undefined,
    ip: req.ip,
    selfOrigin: selfOrigin(config, req),
  });
  const visitorOf = (req: FastifyRequest): Promise<Visitor> =>
    services.widget.sessions.authenticate(bearer(req.headers.authorization), visitorRequest(req));

  await app.register(
    async (scope) => {
      scope.addHook('onRequest', async (req, reply) => {
        const origin = req.headers.origin;
        if (typeof origin === 'string' && origin) {
          reply.header('access-control-allow-origin', origin);
          reply.header('vary', 'Origin');
          reply.header('access-control-expose-headers', 'Retry-After');
        }
      });
      scope.options('/*', { schema: { hide: true } }, async (_req, reply) => {
        reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
        reply.header('access-control-allow-headers', 'authorization, content-type');
        reply.header('access-control-max-age', '600');
        return reply.code(204).send();
      });

      scope.get<{ Params: { key: string } }>(
        '/widgets/:key',
        {
          schema: {
            tags,
            security,
            summary: "A widget's public configuration (title, colors, pre-chat and offline forms)",
            params: Type.Object({ key: Key }),
            response: { 200: PublicConfig, ...errors },
          },
        },
        async (req) => services.widget.sessions.config(req.params.key, visitorRequest(req)),
      );

      scope.post<{ Body: Static<typeof SessionBody> }>(
        '/sessions',
        {
          bodyLimit: VISITOR_BODY_LIMIT,
          schema: {
            tags,
            security,
            summary: 'Start or resume a visitor session',
            description: [
              'With `token` of an earlier session of this widget: resumes it (given pre-chat fields update the visitor).',
              'Otherwise a new visitor: the pre-chat fields the widget requires must be given (400 `prechat_required`),',
              'within the per-IP limit of new sessions (429). With identity verification on, every call carries',
              '`identifier` and `signature` (hex HMAC-SHA256 of the identifier keyed with the widget secret): missing 403',
              '`identity_required`, wrong 403 `identity_invalid`. Unknown key 404, disallowed Origin 403.',
            ].join(' '),
            body: SessionBody,
            response: { 200: Session, ...errors },
          },
        },
        async (req) => services.widget.sessions.startSession(req.body, visitorRequest(req)),
      );

      scope.post<{ Body: Static<typeof MessageBody> }>(
        '/messages',
        {
          bodyLimit: VISITOR_BODY_LIMIT,
          schema: {
            tags,
            security,
            summary: 'Send a visitor message (Authorization: Bearer <visitor token>)',
            description: `Text (at most ${LIMITS.text} characters) and/or an uploaded file. Empty: 400. A repeated clientId answers the stored message. Rate limited per visitor and per IP (429).`,
            body: MessageBody,
            response: { 200: Type.Object({ message: VisitorMessage }), ...errors },
          },
        },
        async (req) => {
          const visitor = await visitorOf(req);
          return { message: await services.widget.conversation.sendMessage(visitor, req.body, req.ip) };
        },
      );

      scope.get<{ Querystring: Static<typeof HistoryQuery> }>(
        '/messages',
        {
          schema: {
            tags,
            security,
            summary: "The visitor's own conversation, 50 messages per page, oldest first within a page",
            querystring: HistoryQuery,
            response: { 200: History, ...errors },
          },
        },
        async (req) => services.widget.conversation.history(await visitorOf(req), req.query.before),
      );

      await scope.register(async (files) => {
        files.addHook('onRequest', refuseDeclaredOversize(services.widget.conversation.maxUploadBytes));
        await files.register(multipart, {
          limits: {
            fileSize: services.widget.conversation.maxUploadBytes + 1,
            files: 1,
            fields: 5,
            fieldSize: 256,
            parts: 6,
            headerPairs: 30,
          },
          throwFileSizeLimit: false,
        });
        files.post(
          '/uploads',
          {
            schema: {
              tags,
              security,
              summary: 'Upload a visitor attachment (multipart/form-data, file part `file`)',
              description: `At most PARLEY_WIDGET_UPLOAD_LIMIT bytes (413); the type must match the bytes (400); HTML, SVG, scripts and programs 415. Then send a message with its id as fileId.`,
              body: { content: { 'multipart/form-data': { schema: UploadForm } } } as unknown as typeof UploadForm,
              response: { 200: Type.Object({ file: VisitorFile }), 413: CurrentErrorBody, 415: CurrentErrorBody, ...errors },
            },
            config: { optionalBody: true },
          },
          async (req, reply) => {
            const visitor = await visitorOf(req);
            if (!req.isMultipart()) throw new AppError(415, 'unsupported_media_type', 'Upload needs a multipart/form-data body');
            try {
              let part;
              try {
                part = await req.file();
              } catch {
                throw invalid('Malformed multipart body');
              }
              if (part?.fieldname !== 'file')
                throw invalid('The file part "file" is missing', [{ path: 'body.file', message: 'is required' }]);
              const stored = await services.widget.conversation.upload(
                visitor,
                part.file,
                { filename: part.filename, mime: part.mimetype },
                req.ip,
              );
              if (part.file.truncated) {
                await services.files.remove(stored.accountId, stored.id);
                throw new AppError(413, 'payload_too_large', 'The file is larger than the widget upload limit');
              }
              return { file: serializeVisitorFile(stored) };
            } catch (err) {
              reply.header('connection', 'close');
              throw err;
            }
          },
        );
      });

      scope.get<{ Querystring: { token?: string } }>(
        '/socket',
        {
          websocket: true,
          schema: {
            tags,
            summary: 'Live replies and typing indicators for a visitor (WebSocket)',
            description:
              'Upgrade with ?token=<visitor token>. Server messages: {type:"ready"}, {type:"message", message}, {type:"typing", typing}. ' +
              'Client messages: {type:"ping"} (answered {type:"pong"}), {type:"typing", typing} (shown to the employees on the realtime stream while the visitor has a conversation). Closed with 4401 for a bad token, 4403 for a disallowed Origin.',
            querystring: { type: 'object', properties: { token: { type: 'string', maxLength: 200 } } },
          },
        },
        (socket: WebSocket, req) => {
          let remove: (() => void) | undefined;
          let visitor: Visitor | undefined;
          let closed = false;
          socket.on('close', () => {
            closed = true;
            remove?.();
            if (visitor && !services.widget.hub.has(visitor.integration.id, visitor.row.public_id))
              services.widget.typing.forgetVisitor(visitor.row.id);
          });
          socket.on('message', (data) => {
            const message = clientMessage(data.toString());
            if (message?.type === 'ping' && socket.readyState === socket.OPEN) socket.send('{"type":"pong"}');
            // The visitor's typing goes to the employees through the outbox (domain/widget/widget-typing.ts).
            if (message?.type === 'typing' && visitor) {
              void services.widget.typing
                .visitorTyping(visitor, message.typing !== false)
                .catch((err) => req.log.warn({ err }, 'visitor typing not recorded'));
            }
          });
          void (async () => {
            let authenticated: Visitor;
            try {
              authenticated = await services.widget.sessions.authenticate(req.query.token, visitorRequest(req));
            } catch (err) {
              const forbidden = (err as { statusCode?: number }).statusCode === 403;
              if (socket.readyState === socket.OPEN)
                socket.send(JSON.stringify({ type: 'error', error: forbidden ? 'origin_not_allowed' : 'unauthorized' }));
              socket.close(forbidden ? 4403 : 4401, forbidden ? 'origin not allowed' : 'unauthorized');
              return;
            }
            if (closed) return;
            visitor = authenticated;
            remove = services.widget.hub.add(visitor.integration.id, visitor.row.public_id, (message) => {
              if (socket.readyState === socket.OPEN) socket.send(message);
            });
            // Replies and typing reach the socket from committed outbox events (visitor-push/).
            await services.visitorPush.start().catch((err) => req.log.error({ err }, 'visitor pushes unavailable'));
            if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ type: 'ready' }));
          })();
        },
      );
    },
    { prefix: '/widget/v1' },
  );
}

/** A visitor socket's message: `{type:"ping"}` or `{type:"typing", typing}`; anything else is ignored. */
function clientMessage(text: string): { type: 'ping' } | { type: 'typing'; typing?: unknown } | undefined {
  if (text.length > 1024) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null) return undefined;
    const type = (parsed as { type?: unknown }).type;
    if (type === 'ping') return { type };
    if (type === 'typing') return { type, typing: (parsed as { typing?: unknown }).typing };
  } catch {
    // not JSON: ignored
  }
  return undefined;
}

function bearer(header: string | undefined): string | undefined {
  return header ? /^\s*Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
}
