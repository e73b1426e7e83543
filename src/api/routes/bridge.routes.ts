import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { Type } from 'typebox';
import type { Services } from '../../services.js';
import type { IntegrationRow } from '../../db/schema.js';
import { AppError } from '../../domain/errors.js';
import { newConnId, type BridgeConnection } from '../../domain/bridge/bridge-hub.js';
import { BRIDGE_PROTOCOL_VERSION, parseBridgeMessage, type BridgeInbound, type BridgeOutbound } from '../../domain/bridge/protocol.js';
import { CurrentErrorBody } from '../errors.js';

/** How long a bridge may stay connected without saying hello. */
const HELLO_WAIT_MS = 10_000;

const Params = Type.Object({ integrationId: Type.String({ pattern: '^[0-9]{1,15}$', description: 'The integration the bridge serves' }) });

declare module 'fastify' {
  interface FastifyRequest {
    bridgeIntegration?: IntegrationRow;
  }
}

/** The integration onRequest authenticated the request for (without one it answered 401). */
function authenticated(req: FastifyRequest): IntegrationRow {
  if (!req.bridgeIntegration) throw new AppError(401, 'unauthorized', 'Wrong or missing bridge token');
  return req.bridgeIntegration;
}

/**
 * The account bridge's endpoints (docs/channels/bridge.md), unversioned like the providers'
 * webhooks: `GET /channels/bridge/<integrationId>` upgraded to a WebSocket, and
 * `POST /channels/bridge/<integrationId>/media` for files. Both take the bridge token as
 * `Authorization: Bearer <token>`, checked in onRequest: a wrong token is answered 401 before the
 * upgrade or the body is read.
 */
export async function registerBridgeRoutes(app: FastifyInstance, services: Services): Promise<void> {
  // Sockets this process holds are released (their requests back to pending) when it closes.
  app.addHook('preClose', async () => services.hub.stop());
  const authenticate = async (req: FastifyRequest<{ Params: { integrationId: string } }>, reply: FastifyReply) => {
    const id = /^\d{1,15}$/.test(req.params.integrationId) ? Number(req.params.integrationId) : 0;
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7).trim() : '';
    const integration = id > 0 ? await services.bridge.authenticate(id, token) : undefined;
    if (!integration) {
      // Nothing more of the request is read: close the connection after answering.
      reply.header('connection', 'close');
      return reply.code(401).send({ error: 'Wrong or missing bridge token', code: 'unauthorized' });
    }
    req.bridgeIntegration = integration;
  };

  app.get<{ Params: { integrationId: string } }>(
    '/channels/bridge/:integrationId',
    {
      websocket: true,
      onRequest: authenticate,
      schema: {
        tags: ['channels'],
        summary: 'Account bridge (WebSocket; docs/channels/bridge.md)',
        description: `Protocol version ${BRIDGE_PROTOCOL_VERSION}. \`Authorization: Bearer <bridge token>\`; a wrong token is 401 before the upgrade.`,
        security: [],
        params: Params,
      },
    },
    (socket: WebSocket, req) => serveBridge(services, socket, authenticated(req)),
  );

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // The stream goes to storage as it arrives, with the upload size limit.
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    scope.post<{ Params: { integrationId: string } }>(
      '/channels/bridge/:integrationId/media',
      {
        onRequest: authenticate,
        bodyLimit: services.deps.config.uploadLimit,
        validatorCompiler: () => () => true,
        schema: {
          tags: ['channels'],
          summary: "Account bridge: store a received file in Parley's storage",
          description:
            'The body is the file; `Content-Type` its type; `X-File-Name` its name (URL-encoded). Answers `{id, url, name, mime, size}`; the bridge names `url` in an inbound attachment.',
          security: [],
          params: Params,
          response: {
            200: Type.Object({ id: Type.String(), url: Type.String(), name: Type.String(), mime: Type.String(), size: Type.Integer() }),
            400: CurrentErrorBody,
            401: CurrentErrorBody,
            413: CurrentErrorBody,
            415: CurrentErrorBody,
          },
        },
      },
      async (req) => {
        const rawName = req.headers['x-file-name'];
        let filename: string | undefined;
        try {
          filename = typeof rawName === 'string' ? decodeURIComponent(rawName) : undefined;
        } catch {
          throw new AppError(400, 'invalid', 'X-File-Name is not URL-encoded');
        }
        const file = await services.bridge.storeMedia(authenticated(req), req.body as NodeJS.ReadableStream as never, {
          filename,
          mime: req.headers['content-type'] ?? '',
        });
        return { id: file.id, url: file.url, name: file.name, mime: file.mime, size: file.size };
      },
    );
  });
}

/**
 * One bridge connection: hello first (protocol version), then messages handled one at a time in
 * the order they came. A message that is not JSON or not a protocol message, or that names
 * another integration, closes the socket with the reason; nothing of it is stored.
 */
function serveBridge(services: Services, socket: WebSocket, integration: IntegrationRow): void {
  const { hub, bridge } = services;
  const log = services.deps.log;
  const integrationId = integration.id;
  let greeted = false;
  /** Whether this connection has said which account it serves (docs/channels/bridge.md "Identity"). */
  let identified = false;
  let closed = false;
  let chain = Promise.resolve();
  const conn: BridgeConnection = {
    connId: newConnId(),
    integrationId,
    send: (message: BridgeOutbound) => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
    },
    close: (code, reason) => {
      if (socket.readyState === socket.OPEN && code >= 4000)
        socket.send(JSON.stringify({ type: 'error', code: String(code), message: reason }));
      socket.close(code, reason);
    },
  };
  const fail = (code: number, reason: string) => {
    closed = true;
    conn.close(code, reason);
  };
  const helloTimer = setTimeout(() => fail(4408, 'no hello'), HELLO_WAIT_MS);
  helloTimer.unref();

  socket.on('message', (data, isBinary) => {
    if (closed) return;
    if (isBinary) return fail(4400, 'binary frames are not part of the protocol');
    const parsed = parseBridgeMessage(data.toString());
    if (!parsed.ok) return fail(4400, parsed.reason);
    const message = parsed.message;
    if (message.integrationId !== undefined && message.integrationId !== integrationId) {
      return fail(4403, 'message claims another integration');
    }
    if (!greeted && message.type !== 'hello') return fail(4400, 'hello first');
    chain = chain
      .then(() => (closed ? undefined : handle(message)))
      .catch((err: unknown) => {
        log.error({ err, integrationId }, 'bridge message failed');
        // The bridge resends what was not acknowledged after it reconnects.
        fail(1011, 'internal error');
      });
  });

  socket.on('close', () => {
    closed = true;
    clearTimeout(helloTimer);
    chain = chain
      .then(async () => {
        if (!greeted) return;
        if (await hub.detach(conn)) await bridge.onOffline(integrationId);
      })
      .catch((err: unknown) => log.warn({ err, integrationId }, 'bridge detach failed'));
  });

  async function handle(message: BridgeInbound): Promise<void> {
    switch (message.type) {
      case 'hello':
        if (greeted) return fail(4400, 'hello twice');
        if (message.protocol !== BRIDGE_PROTOCOL_VERSION)
          return fail(4406, `protocol ${message.protocol} is not supported (this Parley speaks ${BRIDGE_PROTOCOL_VERSION})`);
        greeted = true;
        clearTimeout(helloTimer);
        await hub.attach(conn);
        conn.send({
          type: 'hello',
          protocol: BRIDGE_PROTOCOL_VERSION,
          integrationId,
          integrationType: integration.type,
          now: services.deps.clock.now(),
        });
        return hub.deliverPending(integrationId);
      case 'login.qr':
      case 'login.prompt':
        return bridge.onPrompt(integrationId, message);
      case 'session':
        // The integration's externalId names its outgoing messages' sender: no carrying them without it.
        if (message.state === 'active' && !identified) return fail(4400, 'identity before session active');
        await bridge.onSession(integrationId, message);
        return hub.deliverPending(integrationId);
      case 'identity':
        identified = true;
        return bridge.onIdentity(integrationId, message);
      case 'inbound': {
        const current = await bridge.liveIntegration(integrationId);
        if (!current) return fail(4410, 'integration disconnected');
        try {
          await bridge.onInbound(current, message);
        } catch (err) {
          if (!(err instanceof AppError) || err.statusCode >= 500) throw err;
          // A message Parley will never take: say so, so the bridge stops resending it.
          conn.send({ type: 'error', code: 'rejected', message: `inbound ${message.id}: ${err.message}` });
        }
        return conn.send({ type: 'ack', id: message.id });
      }
      case 'result':
        return hub.answer(conn, message);
      case 'status':
        log.debug({ integrationId, messageId: message.messageId, status: message.status }, 'bridge status');
        return;
    }
  }
}
