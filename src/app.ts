import crypto from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Services } from './services.js';
import { registerApi, type RouteDef } from './api/route.js';
import { API_ROUTES } from './api/routes/index.js';
import { registerSystemRoutes } from './api/routes/system.routes.js';
import { errorHandler, notFoundHandler } from './api/errors.js';
import { validatorCompiler } from './api/validation.js';
import { createAuthHook } from './api/auth-hook.js';
import { VERSION } from './version.js';

export interface AppOptions {
  services: Services;
  /** A pino logger; none (silent) in tests. */
  logger?: FastifyBaseLogger;
  /** The versioned routes to serve; every route of the API unless a test adds its own. */
  routes?: RouteDef[];
}

/** Builds the HTTP face over a ready domain core. It owns no resources: the caller closes the database. */
export async function buildApp({ services, logger, routes = API_ROUTES }: AppOptions): Promise<FastifyInstance> {
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

  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler(notFoundHandler);

  // Real clients send `Content-Type: application/json` with no body where a body is optional.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.trim() === '') return done(null, undefined);
    return parseJson(req, body as string, done);
  });

  app.decorateRequest('auth', null);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  app.addHook('onRequest', createAuthHook(services));
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined && req.routeOptions.config?.optionalBody) req.body = {};
  });
  app.addHook('onResponse', async (req, reply) => {
    req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: reply.elapsedTime }, 'request');
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley API',
        version: VERSION,
        description:
          'Customer messaging inbox. Versions /v1.1, /v1.2 and /v1.3 are served side by side; v1.3 is the reference.',
      },
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'Authorization: Bearer <jwt>, JWT <jwt>, or the bare <jwt>',
          },
        },
      },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  registerSystemRoutes(app, services);
  await registerApi(app, routes, services);

  app.get('/docs/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  return app;
}
