import crypto from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Services } from './services.js';
import { registerApi, type RouteDef } from './api/route.js';
import { API_ROUTES } from './api/routes/index.js';
import { registerSystemRoutes } from './api/routes/system.routes.js';
import { registerAppRoutes } from './api/routes/app.routes.js';
import { registerFileRoutes } from './api/routes/files.routes.js';
import { registerChannelWebhookRoutes } from './api/routes/channel-webhooks.routes.js';
import { registerBridgeRoutes } from './api/routes/bridge.routes.js';
import { registerMultipart, takesFiles } from './api/routes/upload.routes.js';
import websocket from '@fastify/websocket';
import { registerRealtimeRoutes } from './api/routes/realtime.routes.js';
import { registerOAuthProtocolRoutes } from './api/routes/oauth-protocol.routes.js';
import { registerWidgetVisitorRoutes } from './api/routes/widget-visitor.routes.js';
import { registerWidgetAssetRoutes } from './api/routes/widget-assets.routes.js';
import { errorHandler, notFoundHandler } from './api/errors.js';
import { validatorCompiler } from './api/validation.js';
import { serializerCompiler } from './api/serialization.js';
import { createAuthHook } from './api/auth-hook.js';
import { swaggerOptions } from './api/openapi.js';
import { registerMetrics } from './metrics/http.js';
import { closeWebSockets, installDrain } from './shutdown.js';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from './domain/json-limits.js';
import { invalid } from './domain/errors.js';
import { installationId } from './domain/installation/installation.repo.js';
import { hostedTypeNamesHook } from './api/type-names-hook.js';

export interface AppOptions {
  services: Services;
  /** A pino logger; none (silent) in tests. */
  logger?: FastifyBaseLogger;
  /** The versioned routes to serve; every route of the API unless a test adds its own. */
  routes?: RouteDef[];
  /** Called for every route as it is registered (tests list them to check the OpenAPI document). */
  onRoute?: (route: RouteOptions) => void;
  /**
   * Resolves once the database's schema is up to date, when it was not yet as the app began to be
   * built (src/main.ts); the app is ready, and listens, only after.
   */
  schema?: Promise<void>;
}

/** Builds the HTTP face over a ready domain core. It owns no resources: the caller closes the database. */
export async function buildApp({ services, logger, routes = API_ROUTES, onRoute, schema }: AppOptions): Promise<FastifyInstance> {
  const { config } = services.deps;
  const app = Fastify({
    ...(logger ? { loggerInstance: logger } : { logger: false }),
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    // Per-request lines cost throughput; requests are logged at debug level by the onResponse hook.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });

  if (onRoute) app.addHook('onRoute', onRoute);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);

  // Real clients send `Content-Type: application/json` with no body where a body is optional.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    // Depth is bounded before parsing: deep nesting costs the parser and validator CPU and memory.
    if (exceedsJsonDepth(body as string)) return done(invalid(`JSON body nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    return parseJson(req, body as string, done);
  });

  installDrain(app);
  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  app.addHook('onRequest', createAuthHook(services));
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && req.routeOptions.config?.optionalBody) req.body = {};
  });
  app.addHook('onSend', hostedTypeNamesHook(services));
  app.addHook('onResponse', async (req, reply) => {
    req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  });

  await app.register(swagger, swaggerOptions(config));
  await app.register(swaggerUi, { routePrefix: '/docs' });

  // Read once the schema is there, before the app is ready. Undefined on a database migrated only
  // part of the way (tests of old migrations).
  let installation: string | undefined;
  app.addHook('onReady', async () => {
    await schema;
    installation = await installationId(services.deps.db.kysely).catch(() => undefined);
  });
  registerSystemRoutes(app, services, () => installation);
  registerMetrics(app, services);
  registerAppRoutes(app);
  await app.register(websocket, {
    options: { maxPayload: 64 * 1024 },
    // Sockets still open when the app closes are told the server goes away (1001), not 1005.
    preClose(done) {
      closeWebSockets(this);
      (this as FastifyInstance & { websocketServer: { close(cb: () => void): void } }).websocketServer.close(() => {});
      done();
    },
  });
  registerRealtimeRoutes(app, services);
  await registerWidgetVisitorRoutes(app, services);
  registerWidgetAssetRoutes(app, services);
  registerFileRoutes(app, services);
  await registerChannelWebhookRoutes(app, services);
  await registerBridgeRoutes(app, services);
  await registerOAuthProtocolRoutes(app, services);
  await registerApi(
    app,
    routes.filter((r) => !takesFiles(r)),
    services,
  );
  // The multipart parser exists only in the scope of the routes that take files (upload).
  await app.register(async (scope) => {
    await registerMultipart(scope, config);
    await registerApi(scope, routes.filter(takesFiles), services);
  });

  app.get('/docs/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
