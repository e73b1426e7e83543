import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ping } from '../../db/database.js';
import type { Services } from '../../services.js';
import { VERSION } from '../../version.js';
import { appIndexHtml, sendAppIndex } from './app.routes.js';

const Health = Type.Object({ status: Type.String(), version: Type.String() });
/** The header of `GET /health` naming this installation (migration 0120): `parley doctor` reads it through PARLEY_PUBLIC_URL. */
export const INSTALLATION_HEADER = 'parley-installation';
const HealthNamed = Type.Object(
  { status: Type.String(), version: Type.String() },
  {
    headers: {
      [INSTALLATION_HEADER]: Type.String({ description: "This installation's id, the same from every process on its database" }),
    },
  },
);
const NotReady = Type.Object({ status: Type.String(), version: Type.String(), failing: Type.Array(Type.String()) });

const LANDING = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Parley</title></head>
<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;line-height:1.5">
<h1>Parley is running</h1>
<p>The REST API is served under <code>/v1.1</code>, <code>/v1.2</code> and <code>/v1.3</code>.
Its reference is at <a href="/docs">/docs</a> (OpenAPI document: <a href="/docs/openapi.json">/docs/openapi.json</a>).</p>
</body></html>`;

/**
 * Unversioned routes: connectivity checks and readiness (docs/api/README.md). `installation`: the
 * installation's id, read once at start-up (before the app is ready) so that liveness never waits
 * for the database.
 */
export function registerSystemRoutes(app: FastifyInstance, services: Services, installation: () => string | undefined): void {
  const health = () => ({ status: 'ok', version: VERSION });

  app.get(
    '/',
    {
      schema: {
        tags: ['system'],
        summary: 'Connectivity check: the app for a browser (Accept: text/html), else the health JSON',
        security: [],
        response: { 200: Health },
      },
    },
    async (req, reply) => {
      if ((req.headers.accept ?? '').includes('text/html')) {
        // The agent app when it is built; this landing page otherwise.
        const html = appIndexHtml();
        if (html) return sendAppIndex(reply, html);
        return reply
          .type('text/html; charset=utf-8')
          .serializer((p: unknown) => String(p))
          .send(LANDING);
      }
      return health();
    },
  );

  app.get(
    '/health',
    { schema: { tags: ['system'], summary: 'Liveness', security: [], response: { 200: HealthNamed } } },
    async (_req, reply) => {
      const id = installation();
      if (id) reply.header(INSTALLATION_HEADER, id);
      return health();
    },
  );

  app.get(
    '/ready',
    {
      schema: {
        tags: ['system'],
        summary: 'Readiness: 200 only when the database and background workers are up',
        security: [],
        response: { 200: Health, 503: NotReady },
      },
    },
    async (_req, reply) => {
      const failing: string[] = [];
      try {
        await ping(services.deps.db);
      } catch {
        failing.push('database');
      }
      for (const worker of services.workers) if (!worker.healthy()) failing.push(worker.name);
      if (failing.length) return reply.code(503).send({ ...health(), status: 'unavailable', failing });
      return health();
    },
  );
}
